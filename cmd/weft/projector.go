package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/projector"
)

// projectorOptions are the flags of `weft projector`.
type projectorOptions struct {
	urls backendURLs
	// readURL is --read-database-url: the standby the read API reads
	// (projector.Config.ReadPool); empty, the primary.
	readURL  *string
	streams  *streamOptions
	ops      *string
	loadKeys func() (*auth.Keys, error)
	cfg      projector.Config
}

// projectorFlags defines the flags of `weft projector`; docs/configuration.md
// is generated from them (configdoc_test.go).
func projectorFlags(env *environment) (*flags, *projectorOptions) {
	f := newFlags("projector", env)
	opt := &projectorOptions{urls: backendFlags(f), streams: streamFlags(f), ops: opsFlag(f, "WEFT_PROJECTOR_OPS_ADDR", projectorOpsAddr)}
	opt.readURL = f.string("read-database-url", "WEFT_PROJECTOR_READ_DATABASE_URL",
		"Postgres URL of a hot standby of --database-url that serves the read API; its replay lag is added to the lag "+
			"the projector reports (empty: read from --database-url; docs/scaling.md)")
	cfg := &opt.cfg
	f.stringVar(&cfg.Addr, "addr", "WEFT_PROJECTOR_ADDR", "", "HTTP listen address of the read API and UI (empty: :8081)")
	f.stringVar(&cfg.GatewayURL, "gateway-url", "WEFT_GATEWAY_URL", "", "the gateway's URL, where the UI's signals go")
	opt.loadKeys = keyFlags(f)
	f.durationVar(&cfg.LagAlert, "lag-alert", "WEFT_PROJECTOR_LAG_ALERT", 0, "lag above which PROJECTOR_LAG_HIGH is raised (0: 5s)")
	f.durationVar(&cfg.ResyncLag, "resync-lag", "WEFT_PROJECTOR_RESYNC_LAG", 0, "lag above which a run resyncs from the log (0: 10s)")
	f.durationVar(&cfg.MaxWait, "max-wait", "WEFT_PROJECTOR_MAX_WAIT", 0, "longest long poll (0: 60s)")
	f.durationVar(&cfg.WaitRecheck, "wait-recheck", "WEFT_PROJECTOR_WAIT_RECHECK", 0,
		"how often a long poll rereads its run with no notification of a change, a safety net (0: 30s)")
	f.intVar(&cfg.MaxLongPollsPerKey, "max-long-polls-per-key", "WEFT_PROJECTOR_MAX_LONG_POLLS_PER_KEY", 0,
		"long polls one API key may hold open at once; more answer 429 (0: 100, negative: no cap)")
	f.Float64Var(&cfg.KeyRate.Rate, "key-rate", 0,
		"read API requests per second per API key; more answer 429 (0: 100, negative: no limit)"+envNote("WEFT_PROJECTOR_KEY_RATE"))
	f.fromEnv("key-rate", "WEFT_PROJECTOR_KEY_RATE")
	f.intVar(&cfg.KeyRate.Burst, "key-burst", "WEFT_PROJECTOR_KEY_BURST", 0, "read API requests one API key may make at once (0: 200)")
	f.intVar(&cfg.Concurrency, "concurrency", "WEFT_PROJECTOR_CONCURRENCY", 0, "batches applied in parallel (0: 1)")
	f.durationVar(&cfg.BatchLinger, "batch-linger", "WEFT_PROJECTOR_BATCH_LINGER", 0,
		"how long a batch of fewer than 256 messages waits for more before it is applied, one snapshot write a run; "+
			"adds to projection lag only (0: 100ms, negative: off, at most 1s)")
	f.intVar(&cfg.StepsPerToken, "steps-per-token", "WEFT_PROJECTOR_STEPS_PER_TOKEN", 0,
		"steps a read answers per token of its key's rate: a larger answer takes more (0: 100)")
	f.intVar(&cfg.MaxChildrenPage, "max-children-page", "WEFT_PROJECTOR_MAX_CHILDREN_PAGE", 0,
		"largest page of a forEach step's children (0: 1000)")
	f.intVar(&cfg.SnapshotCacheSteps, "snapshot-cache-steps", "WEFT_PROJECTOR_SNAPSHOT_CACHE_STEPS", 0,
		"steps of recently read snapshots kept decoded in memory (0: 50000, negative: no cache)")
	return f, opt
}

// runProjector is `weft projector`: the snapshot projector with the read
// API and the UI (docs/read-api.md). Any number may run. `weft projector
// rebuild` is runProjectorRebuild.
func runProjector(ctx context.Context, env *environment, args []string) error {
	if len(args) > 0 && args[0] == "rebuild" {
		return runProjectorRebuild(ctx, env, args[1:])
	}
	f, opt := projectorFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	if d := opt.cfg.BatchLinger; d > projector.MaxBatchLinger {
		return fmt.Errorf("weft projector --batch-linger: %v is above the most allowed, %v", d, projector.MaxBatchLinger)
	}
	keys, err := opt.loadKeys()
	if err != nil {
		return err
	}
	o, err := newOps(ctx, env, "weft-projector", *opt.ops, opsHint(f))
	if err != nil {
		return err
	}
	b, err := opt.urls.open(ctx, "projector")
	if err != nil {
		return err
	}
	defer b.close()
	cfg := opt.cfg
	cfg.Keys = keys
	checks := append(b.checks(streams.EventsStream), consumerChecks(b, projectorConsumers()...)...)
	if *opt.readURL != "" {
		read, err := openPool(ctx, *opt.readURL)
		if err != nil {
			return fmt.Errorf("--read-database-url: %w", err)
		}
		defer read.Close()
		cfg.ReadPool = read
		checks = append(checks, readPoolCheck(read))
	}
	return withOps(ctx, env, o, checks, func(ctx context.Context) error {
		if err := b.streams(ctx, opt.streams, env.logger, streams.EventsStream); err != nil {
			return err
		}
		p, err := newProjector(b.pool, b.nc, cfg, o, env.logger)
		if err != nil {
			return err
		}
		return runUntilDone(ctx, env.logger, "projector", p.Run)
	})
}

// readPoolCheck is the readiness check of the read API's standby, named
// "postgres read" beside the primary's "postgres".
func readPoolCheck(pool *pgxpool.Pool) health.Check {
	c := health.Postgres(pool)
	c.Name = "postgres read"
	return c
}

// newProjector builds a projector whose metrics go to o's MeterProvider,
// served at /metrics on the ops listener only (they count every tenant's
// runs; the API listener is public), and whose spans go to o's
// TracerProvider.
func newProjector(pool *pgxpool.Pool, nc *nats.Conn, cfg projector.Config, o *ops, logger *slog.Logger) (*projector.Service, error) {
	cfg.Logger, cfg.MeterProvider, cfg.TracerProvider = logger, o.meters, o.tracer
	return projector.New(pool, nc, cfg)
}

// startDevProjector starts the dev stack's projector on cfg.uiAddr with
// the dev keys, forwarding the UI's signals to gatewayURL. It returns the
// UI's URL.
func startDevProjector(ctx context.Context, logger *slog.Logger, pool *pgxpool.Pool, nc *nats.Conn, cfg devConfig,
	o *ops, keys *auth.Keys, gatewayURL string) (string, func(context.Context) error, error) {
	// The sign-in form names the token's file.
	p, err := newProjector(pool, nc, projector.Config{Keys: keys, GatewayURL: gatewayURL, DevTokenFile: devTokenFile(cfg)}, o, logger)
	if err != nil {
		return "", nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.uiAddr)
	if err != nil {
		return "", nil, fmt.Errorf("UI address %s is taken: stop what uses it or pass --ui-addr / WEFT_DEV_UI_ADDR: %w", cfg.uiAddr, err)
	}
	if err := p.Start(context.WithoutCancel(ctx), ln); err != nil {
		return "", nil, err
	}
	return "http://" + ln.Addr().String(), p.Stop, nil
}

// projectorRebuildFlags defines the flags of `weft projector rebuild`.
func projectorRebuildFlags(env *environment) (*flags, *string) {
	f := newFlags("projector rebuild", env)
	return f, f.string("database-url", "WEFT_DATABASE_URL", "Postgres connection URL")
}

// runProjectorRebuild is `weft projector rebuild`: one pass over every run
// of the event log that projects each run without a snapshot from its log,
// then a report of what it did and at what rate. It needs Postgres only,
// and may run while projectors do (docs/read-api.md, "Rebuilding
// snapshots").
func runProjectorRebuild(ctx context.Context, env *environment, args []string) error {
	f, db := projectorRebuildFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	pool, err := openPool(ctx, *db)
	if err != nil {
		return err
	}
	defer pool.Close()
	r, err := projector.NewRebuilder(pool, projector.Config{Logger: env.logger})
	if err != nil {
		return err
	}
	st, err := r.Rebuild(ctx)
	if err != nil {
		return fmt.Errorf("rebuilt %d runs, then: %w", st.Rebuilt, err)
	}
	_, err = fmt.Fprintf(env.stdout, "rebuilt %d of the log's %d runs in %s (%.0f runs/s)\n",
		st.Rebuilt, st.Scanned, st.Elapsed.Round(time.Millisecond), st.RunsPerSecond())
	return err
}
