package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/weftrun/weft/bench/peers/dbos/internal/workload"
)

// workerReady is the line the worker prints once it dequeues.
const workerReady = "ready"

// workerStopWait bounds the worker's drain once told to stop.
const workerStopWait = 15 * time.Second

// runWorker is the worker process: it runs workload.StartWorker on the
// database given, prints workerReady, and shuts DBOS down when ctx ends or
// its stdin closes (the benchmark holds the other end, so the worker does
// not outlive it).
func runWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dbospeer worker", flag.ContinueOnError)
	dbURL := fs.String("db", "", "system database URL (required)")
	queuePoll := fs.Duration("queue-poll", workload.DefaultPoll, "DBOS queue base polling interval")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbURL == "" {
		return errors.New("worker: -db is required")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := workload.StartWorker(ctx, *dbURL, workload.Config{QueuePoll: *queuePoll, Logger: logger})
	if err != nil {
		return err
	}
	fmt.Println(workerReady)
	<-ctx.Done()
	if err := dbos.Shutdown(w, workerStopWait); err != nil {
		return fmt.Errorf("worker shutdown: %w", err)
	}
	return nil
}

// workerProcess is a running worker process, seen from the benchmark.
type workerProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// startWorker starts this binary as a worker on dbURL and returns once it
// is ready to dequeue.
func startWorker(ctx context.Context, dbURL string, queuePoll time.Duration) (*workerProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "worker", "-db", dbURL, "-queue-poll", queuePoll.String()) // #nosec G204 -- this binary
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = workerStopWait + 5*time.Second
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	w := &workerProcess{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := sc.Scan() && sc.Text() == workerReady
		ready <- ok
		_, _ = io.Copy(io.Discard, stdout)
		w.done <- cmd.Wait()
	}()
	select {
	case ok := <-ready:
		if ok {
			return w, nil
		}
	case <-ctx.Done():
	case <-time.After(2 * time.Minute):
	}
	_ = w.stop()
	return nil, errors.New("worker did not become ready")
}

// pid is the worker's process id.
func (w *workerProcess) pid() int { return w.cmd.Process.Pid }

// stop tells the worker to shut down and waits for it, killing it if it
// has not exited within its drain bound and a margin.
func (w *workerProcess) stop() error {
	_ = w.stdin.Close()
	select {
	case err := <-w.done:
		return err
	case <-time.After(workerStopWait + 5*time.Second):
		_ = w.cmd.Process.Kill()
		return fmt.Errorf("worker killed after %v: %w", workerStopWait+5*time.Second, <-w.done)
	}
}
