package soak

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is one soak. The zero value of each field means its default.
type Config struct {
	// Seed drives every choice of the driver and the injector; zero draws
	// one at random (printed, to replay).
	Seed uint64
	// Duration is how long runs are started and faults injected
	// (default 5 minutes); quiescence and the checks come after.
	Duration time.Duration
	// Faults lists the fault kinds injected (default all; see parseFaults).
	Faults []string
	// Rate is how many runs the driver starts per second (default 3).
	Rate float64
	// Quiesce bounds the wait, after the faults stop, for every run to end
	// and the read model to catch up (default 6 minutes: a lost task costs
	// its 20 s timeout, the engine's task grace, stall and sweep times).
	Quiesce time.Duration
	// RecoveryBound bounds the wait for progress after one fault (default
	// 3 minutes); a fault without progress within it is a failure.
	RecoveryBound time.Duration
	// Out is where the summary JSON is written (default
	// $TMPDIR/weft-soak-<seed>.json).
	Out string
	// Keep keeps the work folder (binaries, logs, NATS store) and the
	// database after the soak; a failing soak keeps the folder anyway.
	Keep bool
	// AdminURL is a superuser URL of the Postgres server (default
	// WEFT_TEST_DATABASE_URL, else the local server).
	AdminURL string
	// Root is the module root (default: the working directory).
	Root string
	// NATSNodes is 1 (default), one nats-server, or 3 or 5, a JetStream
	// cluster with every stream at that many replicas, whose "nats" fault
	// kills the WEFT_EVENTS leader, the meta leader and a follower in turn.
	NATSNodes int
	// PGFailover runs a private Postgres primary with a synchronous
	// standby, reached through a multi-host URL, in place of AdminURL's
	// server, and adds the fault pg-failover (at most once: SIGKILL of the
	// primary, promotion of the standby).
	PGFailover bool
}

// ConfigFromEnv reads SOAK_SEED, SOAK_DURATION, SOAK_FAULTS, SOAK_RATE,
// SOAK_QUIESCE, SOAK_RECOVERY_BOUND, SOAK_OUT, SOAK_KEEP, SOAK_NATS_NODES,
// SOAK_PG_FAILOVER and WEFT_TEST_DATABASE_URL.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var c Config
	var err error
	if s := getenv("SOAK_SEED"); s != "" {
		if c.Seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			return c, fmt.Errorf("SOAK_SEED: %w", err)
		}
	}
	for name, d := range map[string]*time.Duration{"SOAK_DURATION": &c.Duration, "SOAK_QUIESCE": &c.Quiesce,
		"SOAK_RECOVERY_BOUND": &c.RecoveryBound} {
		if s := getenv(name); s != "" {
			if *d, err = time.ParseDuration(s); err != nil {
				return c, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if s := getenv("SOAK_RATE"); s != "" {
		if c.Rate, err = strconv.ParseFloat(s, 64); err != nil || c.Rate <= 0 || c.Rate > 100 {
			return c, fmt.Errorf("SOAK_RATE %q: want a number of runs per second in (0, 100]", s)
		}
	}
	if s := getenv("SOAK_NATS_NODES"); s != "" {
		if c.NATSNodes, err = strconv.Atoi(s); err != nil || (c.NATSNodes != 1 && c.NATSNodes != 3 && c.NATSNodes != 5) {
			return c, fmt.Errorf("SOAK_NATS_NODES %q: want 1, 3 or 5", s)
		}
	}
	if c.Faults, err = parseFaults(getenv("SOAK_FAULTS")); err != nil {
		return c, err
	}
	c.Out, c.Keep, c.AdminURL = getenv("SOAK_OUT"), getenv("SOAK_KEEP") != "", getenv("WEFT_TEST_DATABASE_URL")
	c.PGFailover = getenv("SOAK_PG_FAILOVER") != ""
	return c, nil
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		c.Seed = binary.LittleEndian.Uint64(b[:])>>1 + 1
	}
	c.Duration = cmp.Or(c.Duration, 5*time.Minute)
	c.Rate = cmp.Or(c.Rate, 3)
	c.NATSNodes = cmp.Or(c.NATSNodes, 1)
	c.Quiesce = cmp.Or(c.Quiesce, 6*time.Minute)
	c.RecoveryBound = cmp.Or(c.RecoveryBound, 3*time.Minute)
	c.Out = cmp.Or(c.Out, filepath.Join(os.TempDir(), fmt.Sprintf("weft-soak-%d.json", c.Seed)))
	c.AdminURL = cmp.Or(c.AdminURL, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	if c.Root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return c, fmt.Errorf("module root: %w", err)
		}
		c.Root = wd
	}
	if _, err := os.Stat(filepath.Join(c.Root, "deploy/nats.conf")); err != nil {
		return c, fmt.Errorf("run the soak from the module root: %w", err)
	}
	return c, nil
}

// faultMargin is how long before the end of the load the last fault may
// come.
const faultMargin = 20 * time.Second

// Run runs one soak: the topology, the driver and the injector for
// cfg.Duration, quiescence, the checks. It returns the summary, whose
// Failed says whether an invariant fired; an error means the soak itself
// could not run. Every process it starts is ended by its PID before it
// returns, also when ctx is cancelled.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) (*Summary, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logger.InfoContext(ctx, "soak", "seed", cfg.Seed, "duration", cfg.Duration.String(), "faults", strings.Join(cfg.Faults, ","),
		"nats_nodes", cfg.NATSNodes)
	dir, err := os.MkdirTemp("", "weft-soak-")
	if err != nil {
		return nil, fmt.Errorf("work folder: %w", err)
	}
	top := &topology{dir: dir, root: cfg.Root, procs: &procs{}}
	sum := &Summary{Seed: cfg.Seed, Duration: cfg.Duration.String(), Faults: cfg.Faults, WorkDir: dir, NATSNodes: cfg.NATSNodes}
	defer func() { cleanup(context.WithoutCancel(ctx), top, cfg, sum, logger) }()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0)) //nolint:gosec // a seeded soak
	if cfg.PGFailover {
		logger.InfoContext(ctx, "soak: starting a Postgres primary and its synchronous standby")
		if top.pg, cfg.AdminURL, err = startPGPair(ctx); err != nil {
			return sum, err
		}
		cfg.Faults = append(slices.Clone(cfg.Faults), pgFailoverKind)
		sum.Faults = cfg.Faults
	}
	if err := setUp(ctx, top, cfg, rng, logger); err != nil {
		return sum, err
	}
	clients, err := newClients(top.gateways, top.readURL)
	if err != nil {
		return sum, err
	}
	began := time.Now()
	until := began.Add(cfg.Duration)
	led := &ledger{}
	drv := &driver{seed: cfg.Seed, rate: cfg.Rate, clients: clients, ledger: led, logger: logger}
	inj := &injector{top: top, rng: rand.New(rand.NewPCG(cfg.Seed, 1)), kinds: cfg.Faults, //nolint:gosec // seeded
		bound: cfg.RecoveryBound, logger: logger}
	injected := make(chan struct{})
	// The last fault comes faultMargin before the driver stops, so that runs
	// approved after it exist to show progress (see progressRuns).
	go func() { defer close(injected); inj.run(ctx, until.Add(-faultMargin)) }()
	drv.run(ctx, until)
	<-injected
	sum.Injected = inj.faults
	reviveAll(ctx, top, logger)
	logger.InfoContext(ctx, "soak: faults stopped; waiting for quiescence", "bound", cfg.Quiesce.String())
	sum.QuiesceMs = quiesce(ctx, top, clients[0], cfg.Quiesce, logger).Milliseconds()
	if ctx.Err() != nil {
		return sum, ctx.Err()
	}
	if err := check(ctx, top, led, clients[0], sum); err != nil {
		return sum, err
	}
	sum.WallMs = time.Since(began).Milliseconds()
	return sum, writeSummary(cfg.Out, sum)
}

// setUp builds the binaries and starts the topology.
func setUp(ctx context.Context, top *topology, cfg Config, rng *rand.Rand, logger *slog.Logger) error {
	logger.InfoContext(ctx, "soak: building weft and nats-server", "dir", top.dir)
	if err := buildBinaries(ctx, top); err != nil {
		return err
	}
	if err := createDB(ctx, top, cfg.AdminURL); err != nil {
		return err
	}
	if err := startNATS(ctx, top, cfg.NATSNodes, rng); err != nil {
		return err
	}
	if err := migrate(ctx, top); err != nil {
		return err
	}
	logger.InfoContext(ctx, "soak: starting the services", "database", top.dbName)
	return startServices(ctx, top, rng)
}

// reviveAll starts every process a failed restart or a crash left down; one
// that will not start is left to the checks ("no process exited by itself",
// "every service ready").
func reviveAll(ctx context.Context, top *topology, logger *slog.Logger) {
	for _, p := range top.procs.all() {
		if !p.alive() {
			if err := top.restart(ctx, p); err != nil {
				logger.ErrorContext(ctx, "soak: revive", "process", p.name, "err", err)
			}
		}
	}
}

// cleanup stops every process by PID, drops the database and removes the
// work folder unless it is kept (cfg.Keep, or a failed soak's logs).
func cleanup(ctx context.Context, top *topology, cfg Config, sum *Summary, logger *slog.Logger) {
	top.procs.stopAll(10 * time.Second)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if top.dbName != "" && !cfg.Keep {
		if err := dropDB(ctx, top, cfg.AdminURL); err != nil {
			logger.ErrorContext(ctx, "soak: drop database", "err", err)
		}
	}
	top.pg.stop(ctx) // its servers are processes too: ended, whatever Keep says
	if cfg.Keep || sum.Failed() || sum.Checks == nil {
		logger.InfoContext(ctx, "soak: work folder kept", "dir", top.dir)
		return
	}
	_ = os.RemoveAll(top.dir)
}
