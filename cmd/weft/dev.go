package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/weftrun/weft/cmd/weft/internal/devfile"
	"github.com/weftrun/weft/internal/boot/pgboot"
	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/internal/store/retention"
	"github.com/weftrun/weft/pkg/schema"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/engine"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// shutdownTimeout bounds how long Ctrl-C waits for the stack to drain.
const shutdownTimeout = 15 * time.Second

// stopGrace is what each part of the dev stack still gets to stop once
// shutdownTimeout is over.
const stopGrace = time.Second

// pgStopTimeout bounds the private Postgres's stop, after the rest of the
// stack: a Ctrl-C of `weft dev` returns within shutdownTimeout plus this.
const pgStopTimeout = 30 * time.Second

type devConfig struct {
	dir        string
	dbURL      string
	pgBinDir   string
	natsPort   int
	syncAlways bool
	demo       bool
	// gatewayAddr is the gateway's listen address; devToken, when set,
	// is the API token instead of the one in <dir>/token.
	gatewayAddr string
	devToken    string
	// uiAddr is the projector's listen address: the read API and the UI.
	uiAddr string
	// opsAddr serves the stack's /healthz, /readyz and /metrics.
	opsAddr string
	// scheduler says whether the gateway fires schedules.
	scheduler bool
	// keyRate bounds each API key's requests to the gateway.
	keyRate keylimit.Limit
	// partitions is the partitions of the streams when weft dev creates
	// them (devPartitions by default).
	partitions int
	// runRetention is how long ended runs are kept (weft maintain).
	runRetention time.Duration
	// checkpoints and sweep are the engine's flags; engine is the engine's
	// Config they make, checked by runDev before anything starts.
	checkpoints checkpointOptions
	sweep       *sweepOptions
	maxRunDepth *int
	bulk        gateway.BulkConfig
	engine      engine.Config
	eventForm   streams.EventForm // the engine's and the gateway's
	// admission is the admission file, shared by the engine and the gateway.
	admission *admissionOptions
}

// devFlags defines the flags of `weft dev`; docs/configuration.md
// is generated from them (configdoc_test.go).
func devFlags(env *environment) (*flags, *devConfig) {
	f := newFlags("dev", env)
	cfg := &devConfig{devToken: env.getenv("WEFT_DEV_TOKEN")}
	f.stringVar(&cfg.dir, "dir", "WEFT_DEV_DIR", ".weft/dev", "folder for the private Postgres and the NATS store")
	f.stringVar(&cfg.dbURL, "database-url", "WEFT_DATABASE_URL", "", "Postgres URL; empty starts a private instance")
	f.stringVar(&cfg.pgBinDir, "postgres-bin-dir", "WEFT_DEV_POSTGRES_BIN_DIR", "", "folder of initdb and pg_ctl for the private Postgres (empty: PATH and the usual places)")
	f.intVar(&cfg.natsPort, "nats-port", "WEFT_DEV_NATS_PORT", 14222, "port of the embedded NATS server")
	f.boolVar(&cfg.syncAlways, "nats-sync-always", "WEFT_NATS_SYNC_ALWAYS", false, "fsync every JetStream write before acking")
	f.boolVar(&cfg.demo, "demo", "WEFT_DEV_DEMO", true, "on the first start of the data folder, append a demo run and log its events as JetStream delivers them")
	f.stringVar(&cfg.gatewayAddr, "gateway-addr", "WEFT_DEV_GATEWAY_ADDR", "127.0.0.1:8080", "listen address of the gateway's HTTP API")
	f.stringVar(&cfg.uiAddr, "ui-addr", "WEFT_DEV_UI_ADDR", "127.0.0.1:8081", "listen address of the UI and the read API")
	f.stringVar(&cfg.opsAddr, "ops-addr", "WEFT_DEV_OPS_ADDR", devOpsAddr, "listen address of the stack's /healthz, /readyz and /metrics; "+opsOff+" turns them off")
	keyRateFlags(f, &cfg.keyRate)
	f.intVar(&cfg.partitions, "partitions", "WEFT_PARTITIONS", devPartitions,
		fmt.Sprintf("partitions of the runs when the streams are created, 1 to %d; an existing data folder keeps its streams' (docs/scaling.md)", streams.MaxPartitions))
	f.boolVar(&cfg.scheduler, "scheduler", "WEFT_DEV_SCHEDULER", true, "fire due schedules (docs/schedules.md); false keeps the schedules API but fires nothing")
	f.durationVar(&cfg.runRetention, "run-retention", "WEFT_RUN_RETENTION", retention.DefaultRunRetention,
		"how long an ended run is kept after its last event (the stack runs weft maintain hourly); negative keeps runs forever")
	cfg.checkpoints = checkpointFlags(f)
	cfg.sweep = sweepFlags(f)
	cfg.admission = admissionFlags(f)
	cfg.maxRunDepth = runDepthFlag(f)
	bulkFlags(f, &cfg.bulk)
	eventFormFlag(f, &cfg.eventForm)
	return f, cfg
}

func runDev(ctx context.Context, env *environment, args []string) error {
	f, cfg := devFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	if err := (streams.Config{Partitions: cfg.partitions}).Validate(); err != nil {
		return fmt.Errorf("weft dev --partitions: %w", err)
	}
	var err error
	if cfg.engine, err = cfg.sweep.apply(cfg.checkpoints.apply(engine.Config{})); err != nil {
		return err
	}
	if cfg.engine, err = applyRunDepth(cfg.engine, "weft dev", *cfg.maxRunDepth); err != nil {
		return err
	}
	if err := cfg.admission.open(env.logger); err != nil {
		return fmt.Errorf("weft dev %w", err)
	}
	cfg.engine.Admission = cfg.admission.limits()
	cfg.engine.EventForm = cfg.eventForm
	if err := devStack(ctx, env, *cfg); err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.stdout, stoppedLine)
	return err
}

// devStack starts every part in order, waits for ctx, and stops them in
// reverse order within shutdownTimeout (stopAll), then the private
// Postgres within pgStopTimeout: Ctrl-C is bounded.
func devStack(ctx context.Context, env *environment, cfg devConfig) (err error) {
	var stops []func(context.Context) error
	stopPG := func(context.Context) error { return nil }
	defer func() {
		err = errors.Join(err, stopAll(ctx, shutdownTimeout, stopGrace, stops), stopPG(ctx))
	}()
	if err := devPortsFree(ctx, cfg); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil { // it holds the token, the NATS password and the task key
		return fmt.Errorf("dev folder: %w", err)
	}
	if cfg.engine.TaskKeys, err = devTaskKeys(cfg.dir); err != nil {
		return err
	}
	o, err := newOps(ctx, env, "weft-dev", cfg.opsAddr, "--ops-addr or WEFT_DEV_OPS_ADDR")
	if err != nil {
		return err
	}
	stops = append(stops, o.closeTraces) // stops run in reverse: this one last
	dbURL, pgData, stopPG, err := devPostgres(ctx, cfg)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, dbURL)
	if err != nil {
		return err
	}
	stops = append(stops, func(context.Context) error { pool.Close(); return nil })
	if _, err := schema.Migrate(ctx, pool); err != nil {
		return err
	}

	bus, busStops, err := devBus(ctx, cfg)
	stops = append(stops, busStops...)
	if err != nil {
		return err
	}
	b := &backends{pool: pool, nc: bus.nc, js: bus.js}
	checks := b.checks(streams.EventsStream, streams.TasksStream, streams.ResultsStream)
	workers, err := workerConsumers("")
	if err != nil {
		return err
	}
	checks = append(checks, consumerChecks(b, slices.Concat(engineConsumers(), projectorConsumers(), workers)...)...)
	opsURL, stopOps, err := o.serve(ctx, env.logger, checks)
	if err != nil {
		return err
	}
	stops = append(stops, stopOps)

	urls := devURLs{db: dbURL, pgData: pgData, nats: bus.userURL, ops: opsURL}
	if cfg.demo, err = firstStart(cfg.dir, cfg.demo); err != nil {
		return err
	}
	appStops, err := startDevApps(ctx, env, b, cfg, o, &urls)
	stops = append(stops, appStops...)
	if err != nil {
		return err
	}
	if err := devfile.Write(cfg.dir, urls.endpoints(cfg, bus.url)); err != nil {
		return err
	}
	if err := devBanner(env, cfg, urls); err != nil {
		return err
	}
	<-ctx.Done()
	_, err = fmt.Fprintln(env.stdout, "shutting down…")
	return err
}

// stoppedLine is what `weft dev` prints once the whole stack has stopped
// cleanly; it then exits 0.
const stoppedLine = "Weft dev stack stopped."

// startDevApps starts Weft's services on the dev stack's backends: the
// relay, engine and worker (then the demo run), the gateway and the
// projector with the UI, and sets the URLs they serve in urls. It returns
// the stop functions of what it started, in start order, also on error.
func startDevApps(ctx context.Context, env *environment, b *backends, cfg devConfig, o *ops, urls *devURLs) ([]func(context.Context) error, error) {
	stops, err := startServices(ctx, env, b.pool, b.nc, cfg, o)
	if err != nil {
		return stops, err
	}
	var gw devGateway
	err = asService(ctx, "gateway", func(ctx context.Context) (err error) {
		gw, err = startDevGateway(ctx, env.logger, b.pool, b.nc, cfg, o)
		return err
	})
	if err != nil {
		return stops, err
	}
	stops = append(stops, gw.stop)
	var uiURL string
	var stopUI func(context.Context) error
	err = asService(ctx, "projector", func(ctx context.Context) (err error) {
		uiURL, stopUI, err = startDevProjector(ctx, env.logger, b.pool, b.nc, cfg, o, gw.keys, gw.url)
		return err
	})
	if err != nil {
		return stops, err
	}
	urls.ui, urls.api, urls.token = uiURL, gw.url, gw.token
	return append(stops, stopUI), nil
}

// devURLs are what the dev stack's banner shows. pgData is the private
// Postgres's folder ("" for a server of WEFT_DATABASE_URL).
type devURLs struct{ ui, api, token, db, pgData, nats, ops string }

// endpoints is what devfile.Name records of u; natsURL is the NATS
// server's URL without credentials.
func (u devURLs) endpoints(cfg devConfig, natsURL string) devfile.Endpoints {
	dir, err := filepath.Abs(cfg.dir)
	if err != nil {
		dir = cfg.dir
	}
	return devfile.Endpoints{Gateway: u.api, ReadAPI: u.ui, NATS: natsURL, NATSUser: devNATSUser,
		NATSPasswordFile: filepath.Join(dir, devNATSPasswordFile), Ops: u.ops,
		TokenFile: devTokenFile(devConfig{dir: dir, devToken: cfg.devToken})}
}

// devTokenFile is the file that holds the dev stack's API token: "token"
// in its data folder, or none when WEFT_DEV_TOKEN gave the token.
func devTokenFile(cfg devConfig) string {
	if cfg.devToken != "" {
		return ""
	}
	return filepath.Join(cfg.dir, "token")
}

func devBanner(env *environment, cfg devConfig, u devURLs) error {
	ops := "off"
	if u.ops != "" {
		ops = u.ops + " (/healthz, /readyz, /metrics)"
	}
	tokenFrom := "in " + filepath.Join(cfg.dir, "token")
	if cfg.devToken != "" {
		tokenFrom = "from WEFT_DEV_TOKEN"
	}
	pg := redact(u.db)
	if u.pgData != "" && u.pgData != filepath.Join(cfg.dir, "pg") {
		pg += "\n            (data in " + u.pgData + ")"
	}
	_, err := fmt.Fprintf(env.stdout, "\nWeft dev stack is up.\n  UI:       %s/#token=%s\n  API:      %s\n  Read API: %s/v1/runs\n  Token:    %s (%s)\n  Postgres: %s\n  NATS:     %s\n            (user %s, password in %s)\n  Ops:      %s\n  Data:     %s\n            (these URLs are in %s: weft commands find them there)\nPress Ctrl-C to stop.\n\n",
		u.ui, u.token, u.api, u.ui, u.token, tokenFrom, pg,
		u.nats, devNATSUser, filepath.Join(cfg.dir, devNATSPasswordFile), ops, cfg.dir, filepath.Join(cfg.dir, devfile.Name))
	return err
}

// demoMarkFile, in the dev data folder, says that its first start has
// been: the demo run is started only on that one (firstStart).
const demoMarkFile = "demo-started"

// firstStart returns whether to start the demo run: demo, on the first
// start of dir only. It marks dir, so that the next start returns false.
func firstStart(dir string, demo bool) (bool, error) {
	if !demo {
		return false, nil
	}
	mark := filepath.Join(dir, demoMarkFile)
	f, err := os.OpenFile(mark, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dev folder: %w", err)
	}
	return true, f.Close()
}

// stopAll calls stops in reverse order, all within timeout: a stop still
// running when the time is up is left behind and reported. The stops
// after it are still called, with a context that has grace left each, so
// that a quick one (closing a pool, shutting NATS down) still happens; a
// Ctrl-C returns within timeout plus grace per stop left.
func stopAll(ctx context.Context, timeout, grace time.Duration, stops []func(context.Context) error) error {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var errs []error
	for i := len(stops) - 1; i >= 0; i-- {
		if stopCtx.Err() == nil {
			errs = append(errs, stopWithin(stopCtx, stops[i]))
			continue
		}
		graceCtx, cancelGrace := context.WithTimeout(context.WithoutCancel(ctx), grace)
		errs = append(errs, stopWithin(graceCtx, stops[i]))
		cancelGrace()
	}
	return errors.Join(errs...)
}

// stopWithin calls stop with ctx and waits for it until ctx ends.
func stopWithin(ctx context.Context, stop func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- stop(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("a part of the dev stack did not stop in time: %w", ctx.Err())
	}
}

// devPostgres returns the configured URL, or starts a private instance
// whose data lives in <dir>/pg and survives restarts, and returns its URL
// and folder. As root, when the postgres user the server runs as cannot
// reach <dir>/pg (a clone in /root), the data lives in a folder of that
// user's under /var/tmp instead, recorded in <dir>/pg/relocated-to
// (pgboot.Config.RelocateRoot). The stop it returns gives the instance
// pgStopTimeout of its own.
func devPostgres(ctx context.Context, cfg devConfig) (url, dataDir string, stop func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if cfg.dbURL != "" {
		return cfg.dbURL, "", noop, nil
	}
	dir, err := filepath.Abs(filepath.Join(cfg.dir, "pg"))
	if err != nil {
		return "", "", noop, err
	}
	inst, err := pgboot.Start(ctx, pgboot.Config{DataDir: dir, BinDir: cfg.pgBinDir})
	if err != nil {
		return "", "", noop, fmt.Errorf("start a private Postgres (or set WEFT_DATABASE_URL to a running server): %w", err)
	}
	stop = func(ctx context.Context) error {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pgStopTimeout)
		defer cancel()
		return inst.Stop(stopCtx)
	}
	pgData := inst.DataDir()
	if rel, err := filepath.Rel(dir, pgData); err == nil && rel == "." {
		pgData = filepath.Join(cfg.dir, "pg") // as the banner names the data folder
	}
	return inst.URL(), pgData, stop, nil
}

// devPortsFree fails, before anything starts, when one of the stack's
// fixed addresses is taken, naming it and the flag that moves it.
func devPortsFree(ctx context.Context, cfg devConfig) error {
	addrs := []struct{ what, addr, hint string }{
		{"gateway address", cfg.gatewayAddr, "--gateway-addr / WEFT_DEV_GATEWAY_ADDR"},
		{"UI address", cfg.uiAddr, "--ui-addr / WEFT_DEV_UI_ADDR"},
		{"NATS port", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.natsPort)), "--nats-port / WEFT_DEV_NATS_PORT"},
		{"ops address", cfg.opsAddr, "--ops-addr / WEFT_DEV_OPS_ADDR (or " + opsOff + ")"},
	}
	for _, a := range addrs {
		if a.addr == opsOff {
			continue
		}
		if err := addrFree(ctx, a.what, a.addr, a.hint); err != nil {
			return err
		}
	}
	return nil
}

// addrFree listens on addr and lets go again; the error says what is
// taken and how to move it.
func addrFree(ctx context.Context, what, addr, hint string) error {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%s %s is taken: stop what uses it or pass %s: %w", what, addr, hint, err)
	}
	return l.Close()
}
