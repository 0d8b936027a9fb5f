// Command dbospeer runs Weft's headline benchmark job on DBOS Transact, the
// way a user with a separate client and worker would, and prints the
// figures as Go benchmark lines (BenchmarkDBOS/closed, …/open=R).
//
//	dbospeer [flags]         the benchmark: it is the client process
//	dbospeer worker [flags]  the worker process the benchmark starts
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weftrun/weft/bench/peers/dbos/internal/pgdb"
	"github.com/weftrun/weft/bench/peers/dbos/internal/workload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "dbospeer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "worker" {
		return runWorker(ctx, args[1:])
	}
	cfg, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	return runBench(ctx, cfg, os.Stdout)
}

// benchConfig is what the benchmark runs; its defaults are
// BenchmarkSystem's shape, with 300/s in place of its open rates.
type benchConfig struct {
	server     string
	queuePoll  time.Duration
	resultPoll time.Duration
	runs       int
	clients    int
	rates      []int
	openFor    time.Duration
	ceilingFor time.Duration
	await      bool
}

func parseBenchFlags(args []string) (benchConfig, error) {
	fs := flag.NewFlagSet("dbospeer", flag.ContinueOnError)
	cfg := benchConfig{}
	server := os.Getenv("WEFT_TEST_DATABASE_URL")
	if server == "" {
		server = pgdb.DefaultServer
	}
	fs.StringVar(&cfg.server, "postgres", server, "Postgres server to make the run's database on (any database of it)")
	fs.DurationVar(&cfg.queuePoll, "queue-poll", workload.DefaultPoll, "DBOS queue base polling interval (DBOS default 1s)")
	fs.DurationVar(&cfg.resultPoll, "result-poll", workload.DefaultPoll, "DBOS GetResult polling interval (DBOS default 1s)")
	fs.IntVar(&cfg.runs, "runs", 3000, "workflows the closed loads enqueue")
	fs.IntVar(&cfg.clients, "clients", 32, "clients of the closed loads")
	rates := fs.String("rates", "100,300", "open-loop rates, workflows/s, comma-separated")
	fs.DurationVar(&cfg.openFor, "open-for", 10*time.Second, "how long each open-loop rate is offered")
	fs.DurationVar(&cfg.ceilingFor, "ceiling-for", 3*time.Second, "how long the insert ceiling is measured")
	fs.BoolVar(&cfg.await, "await", true, "also run a closed load whose clients await each result (GetResult)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	for f := range strings.SplitSeq(*rates, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r <= 0 {
			return cfg, fmt.Errorf("bad rate %q in -rates", f)
		}
		cfg.rates = append(cfg.rates, r)
	}
	if cfg.runs <= 0 || cfg.clients <= 0 {
		return cfg, errors.New("-runs and -clients must be positive")
	}
	if cfg.openFor < time.Second {
		return cfg, errors.New("-open-for must be at least 1s")
	}
	return cfg, nil
}
