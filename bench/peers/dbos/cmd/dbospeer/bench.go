package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/bench/peers/dbos/internal/pgdb"
	"github.com/weftrun/weft/bench/peers/dbos/internal/workload"
)

// benchName is the prefix of every result line the peer prints.
const benchName = "BenchmarkDBOS"

// benchRig is what the loads run against: the worker process, a DBOS
// client in this process, and a pool that reads the figures back.
type benchRig struct {
	cfg    benchConfig
	worker *workerProcess
	client dbos.Client
	pool   *pgxpool.Pool
}

// runBench makes a fresh database, starts the worker process, measures the
// server's insert ceiling, runs the loads and prints a result line for
// each on out, then stops the worker and drops the database.
func runBench(ctx context.Context, cfg benchConfig, out io.Writer) (err error) {
	db, err := pgdb.Create(ctx, cfg.server, "dbos_bench")
	if err != nil {
		return err
	}
	defer func() {
		if dropErr := db.Drop(context.WithoutCancel(ctx)); err == nil {
			err = dropErr
		}
	}()
	worker, err := startWorker(ctx, db.URL, cfg.queuePoll)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := worker.stop(); err == nil && stopErr != nil {
			err = stopErr
		}
	}()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client, err := workload.NewClient(ctx, db.URL, logger)
	if err != nil {
		return err
	}
	defer func() { _ = dbos.Shutdown(client, 10*time.Second) }()
	pool, err := newPool(ctx, db.URL)
	if err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	defer pool.Close()

	if _, err := io.WriteString(out, header(cfg)); err != nil {
		return err
	}
	ceiling, err := insertCeiling(ctx, pool, cfg.ceilingFor)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "%s/ceiling\t1\t%.0f commits/s\t0 ns/op\n", benchName, ceiling); err != nil {
		return err
	}
	rig := &benchRig{cfg: cfg, worker: worker, client: client, pool: pool}
	return rig.runLoads(ctx, out, ceiling)
}

// runLoads runs the closed load, the awaiting closed load when asked, and
// each open rate, printing each one's line.
func (r *benchRig) runLoads(ctx context.Context, out io.Writer, ceiling float64) error {
	type named struct {
		name string
		run  func() (loadRun, error)
	}
	loads := []named{{"closed", func() (loadRun, error) { return r.closed(ctx, "closed", false) }}}
	if r.cfg.await {
		loads = append(loads, named{"closed_await", func() (loadRun, error) { return r.closed(ctx, "await", true) }})
	}
	for _, rate := range r.cfg.rates {
		loads = append(loads, named{fmt.Sprintf("open=%d", rate), func() (loadRun, error) {
			return r.open(ctx, fmt.Sprintf("open%d", rate), rate)
		}})
	}
	for _, l := range loads {
		run, err := l.run()
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		fig, err := r.figures(ctx, run)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		if _, err := io.WriteString(out, fig.line(l.name, ceiling)); err != nil {
			return err
		}
	}
	return nil
}

// loadgenApp is the application_name of the load generator's own
// connections, whose backends' CPU is not counted as the system's.
const loadgenApp = "dbospeer_loadgen"

// newPool is the load generator's own pool, sized as Weft's bench sizes
// its: 16 connections.
func newPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.RuntimeParams["application_name"] = loadgenApp
	return pgxpool.NewWithConfig(ctx, cfg)
}

// header is the settings as Go benchmark configuration lines.
func header(cfg benchConfig) string {
	version := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/dbos-inc/dbos-transact-golang" {
				version = m.Version
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "goos: %s\ngoarch: %s\ncpu_cores: %d\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintf(&b, "peer: dbos-transact-golang %s (client process enqueues, worker process dequeues)\n", version)
	fmt.Fprintf(&b, "dbos_queue_poll: %v (WithQueueBasePollingInterval; DBOS default 1s)\n", cfg.queuePoll)
	fmt.Fprintf(&b, "dbos_result_poll: %v (WithHandlePollingInterval on GetResult; DBOS default 1s)\n", cfg.resultPoll)
	fmt.Fprintf(&b, "load: closed %d workflows from %d clients; open %v workflows/s for %v each\n",
		cfg.runs, cfg.clients, cfg.rates, cfg.openFor)
	return b.String()
}

// insertCeiling is the server's plain single-row INSERT commits per second
// from 8 connections for d, in a table of its own, as Weft's bench
// measures it.
func insertCeiling(ctx context.Context, pool *pgxpool.Pool, d time.Duration) (float64, error) {
	if _, err := pool.Exec(ctx, "CREATE TABLE bench_ceiling (id bigserial PRIMARY KEY, payload text NOT NULL)"); err != nil {
		return 0, fmt.Errorf("ceiling table: %w", err)
	}
	var (
		commits atomic.Int64
		wg      sync.WaitGroup
		failed  atomic.Pointer[error]
	)
	deadline := time.Now().Add(d)
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := pool.Exec(ctx, "INSERT INTO bench_ceiling (payload) VALUES ('x')"); err != nil {
					failed.Store(&err)
					return
				}
				commits.Add(1)
			}
		})
	}
	wg.Wait()
	rate := float64(commits.Load()) / time.Since(start).Seconds()
	if err := failed.Load(); err != nil {
		return 0, fmt.Errorf("ceiling insert: %w", *err)
	}
	if _, err := pool.Exec(ctx, "DROP TABLE bench_ceiling"); err != nil {
		return 0, fmt.Errorf("drop ceiling table: %w", err)
	}
	return rate, nil
}
