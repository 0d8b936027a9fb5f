package main

import (
	"context"

	activityworker "github.com/weftrun/weft/services/activity-worker"
	"github.com/weftrun/weft/services/engine"
)

// runEngine is `weft engine`: the engine as a process of its own. Any
// number may run against one database and one NATS.
func runEngine(ctx context.Context, env *environment, args []string) error {
	f := newFlags("engine", env)
	urls := backendFlags(f)
	concurrency := f.int("concurrency", "WEFT_ENGINE_CONCURRENCY", 0, "rounds in flight per consumer (0: default)")
	if err := f.parse(args); err != nil {
		return err
	}
	pool, nc, closeAll, err := urls.open(ctx, "weft-engine", true)
	if err != nil {
		return err
	}
	defer closeAll()
	eng, err := engine.New(pool, nc, engine.Config{Concurrency: *concurrency}, env.logger)
	if err != nil {
		return err
	}
	return runUntilDone(ctx, env.logger, "engine", eng.Run)
}

// runWorker is `weft worker`: an activity worker with the demo activities
// (echo, sleep, fail-n-times, http-get). It needs NATS only.
func runWorker(ctx context.Context, env *environment, args []string) error {
	f := newFlags("worker", env)
	natsURL := f.string("nats-url", "WEFT_NATS_URL", "NATS server URL")
	queue := f.string("queue", "WEFT_WORKER_QUEUE", "task queue to serve (empty: default)")
	concurrency := f.int("concurrency", "WEFT_WORKER_CONCURRENCY", 0, "activities run at once (0: default)")
	if err := f.parse(args); err != nil {
		return err
	}
	nc, err := connectStreams(ctx, *natsURL, "weft-worker")
	if err != nil {
		return err
	}
	defer nc.Close()
	w, err := activityworker.New(nc, activityworker.Config{Queue: *queue, Concurrency: *concurrency}, env.logger)
	if err != nil {
		return err
	}
	return runUntilDone(ctx, env.logger, "activity worker", w.Run)
}
