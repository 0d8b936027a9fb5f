package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/internal/store/retention"
)

// maintainOptions are the flags of `weft maintain`.
type maintainOptions struct {
	db    *string
	ops   *string
	every time.Duration
	cfg   retention.Config
}

// maintainFlags defines the flags of `weft maintain`; docs/configuration.md
// is generated from them (configdoc_test.go).
func maintainFlags(env *environment) (*flags, *maintainOptions) {
	f := newFlags("maintain", env)
	o := &maintainOptions{
		db: f.string("database-url", "WEFT_DATABASE_URL", "Postgres connection URL, as the role that owns Weft's schema"),
	}
	f.durationVar(&o.cfg.RunRetention, "run-retention", "WEFT_RUN_RETENTION", retention.DefaultRunRetention,
		"how long an ended run is kept after its last event, with its snapshot and records; negative keeps runs forever")
	f.intVar(&o.cfg.PartitionsAhead, "partitions-ahead", "WEFT_PARTITIONS_AHEAD", retention.DefaultPartitionsAhead,
		"monthly event-log partitions kept created from the current month on")
	f.durationVar(&o.every, "every", "WEFT_MAINTAIN_EVERY", 0, "repeat the pass at this interval until stopped (0: one pass, then exit)")
	o.ops = f.stringDefault("ops-addr", "WEFT_MAINTAIN_OPS_ADDR", maintainOpsAddr,
		"listen address of /healthz, /readyz and /metrics while --every repeats the pass (one pass serves none); "+opsOff+" turns them off")
	return f, o
}

// runMaintain is `weft maintain`: it deletes the runs that ended more than
// the retention ago and creates the event log's partitions ahead, once or
// every --every. Repeating, it serves its ops listener, whose /readyz
// checks Postgres; one pass serves none.
func runMaintain(ctx context.Context, env *environment, args []string) error {
	f, o := maintainFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	if o.cfg.PartitionsAhead < 1 {
		return fmt.Errorf("--partitions-ahead must be at least 1, got %d", o.cfg.PartitionsAhead)
	}
	if o.cfg.RunRetention == 0 {
		return errors.New("--run-retention must not be 0: give a duration, or a negative one to keep runs forever")
	}
	var listener *ops
	if o.every > 0 {
		var err error
		if listener, err = newOps(ctx, env, "weft-maintain", *o.ops, opsHint(f)); err != nil {
			return err
		}
	}
	pool, err := openPool(ctx, *o.db)
	if err != nil {
		return err
	}
	defer pool.Close()
	o.cfg.Logger = env.logger
	k := retention.New(pool, o.cfg)
	if o.every > 0 {
		return withOps(ctx, env, listener, []health.Check{health.Postgres(pool)}, func(ctx context.Context) error {
			return runUntilDone(ctx, env.logger, "maintain", func(ctx context.Context) error { return k.Run(ctx, o.every) })
		})
	}
	rep, err := k.Pass(ctx)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(env.stdout, "deleted %d ended runs; created %d partitions\n", rep.RunsDeleted, rep.PartitionsCreated)
	return err
}
