// Command soak runs Weft's process-level soak; see package soak and
// docs/reliability.md. Run it from the module root (`make soak`).
// SOAK_SEED, SOAK_DURATION, SOAK_FAULTS, SOAK_RATE, SOAK_QUIESCE,
// SOAK_RECOVERY_BOUND, SOAK_OUT and SOAK_KEEP configure it. It exits 1 when
// an invariant fired or the soak could not run, printing the seed to replay.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/weftrun/weft/soak"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := soak.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	sum, err := soak.Run(ctx, cfg, logger)
	if err == nil {
		err = sum.Print(os.Stdout)
	}
	switch {
	case err != nil && sum != nil:
		return fmt.Errorf("%w (replay: SOAK_SEED=%d)", err, sum.Seed)
	case err != nil:
		return err
	case sum.Failed():
		return fmt.Errorf("invariants failed; replay with SOAK_SEED=%d SOAK_DURATION=%s; logs in %s",
			sum.Seed, sum.Duration, sum.WorkDir)
	}
	fmt.Printf("soak passed (SOAK_SEED=%d)\n", sum.Seed)
	return nil
}
