package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// gatewayOptions are the flags of `weft gateway`.
type gatewayOptions struct {
	urls      backendURLs
	ops       *string
	addr      *string
	loadKeys  func() (*auth.Keys, error)
	intake    gateway.IntakeConfig
	schedules gateway.ScheduleConfig
	triggers  gateway.TriggerConfig
	scheduler *bool
	keyRate   keylimit.Limit
	bulk      gateway.BulkConfig
	maxBatch  int
	admission *admissionOptions
	readAPI   *string
	eventForm streams.EventForm
}

// gatewayFlags defines the flags of `weft gateway`; docs/configuration.md
// is generated from them (configdoc_test.go).
func gatewayFlags(env *environment) (*flags, *gatewayOptions) {
	f := newFlags("gateway", env)
	opt := &gatewayOptions{
		urls:     backendFlags(f),
		ops:      opsFlag(f, "WEFT_GATEWAY_OPS_ADDR", gatewayOpsAddr),
		addr:     f.string("addr", "WEFT_GATEWAY_ADDR", "HTTP listen address (empty: :8080)"),
		loadKeys: keyFlags(f),
	}
	in := &opt.intake
	f.durationVar(&in.SignalRetention, "signal-retention", "WEFT_SIGNAL_RETENTION", 0, "how long a signal's acceptance answers repeats (0: 24h)")
	f.durationVar(&in.RunRequestRetention, "run-request-retention", "WEFT_RUN_REQUEST_RETENTION", 0, "how long a run request answers repeats, and so how long a trigger event's id is deduplicated (0: 168h)")
	f.intVar(&in.MaxSignalPayloadBytes, "max-signal-payload-bytes", "WEFT_MAX_SIGNAL_PAYLOAD_BYTES", 0, "largest signal payload (0: 65536)")
	f.intVar(&in.MaxSignalsPerRunMinute, "max-signals-per-run-minute", "WEFT_MAX_SIGNALS_PER_RUN_MINUTE", 0, "signals one run accepts per minute (0: 60)")
	opt.scheduler = schedulerFlags(f, "WEFT_GATEWAY_SCHEDULER", &opt.schedules, &opt.triggers)
	keyRateFlags(f, &opt.keyRate)
	bulkFlags(f, &opt.bulk)
	f.intVar(&opt.maxBatch, "max-rpc-batch", "WEFT_MAX_RPC_BATCH", 0, "largest JSON-RPC batch; a longer one is refused whole (0: 100)")
	opt.admission = admissionFlags(f)
	eventFormFlag(f, &opt.eventForm)
	opt.readAPI = f.string("read-api-url", "WEFT_READ_API_URL",
		"the read API's base URL (weft projector), named in the 404 of a read sent to the gateway (empty: none)")
	return f, opt
}

// keyRateFlags adds the flags of the per-key request rate (Config.KeyRate)
// to f.
func keyRateFlags(f *flags, l *keylimit.Limit) {
	f.Float64Var(&l.Rate, "key-rate", 0, "requests per second one API key may make to this gateway, all transports together; a JSON-RPC batch counts each call (0: 100; negative: no limit)"+envNote("WEFT_GATEWAY_KEY_RATE"))
	f.fromEnv("key-rate", "WEFT_GATEWAY_KEY_RATE")
	f.intVar(&l.Burst, "key-burst", "WEFT_GATEWAY_KEY_BURST", 0, "requests one API key may make at once, after an idle spell (0: 200)")
}

// bulkFlags adds the flags of bulk jobs (gateway.Config.Bulk, docs/api.md
// "Bulk operations") to f.
func bulkFlags(f *flags, c *gateway.BulkConfig) {
	f.intVar(&c.Rate, "bulk-rate", "WEFT_BULK_RATE", 0,
		fmt.Sprintf("runs one bulk job acts on per second, so that it leaves room to live traffic (0: %d)", gateway.DefaultBulkRate))
	f.intVar(&c.MaxRuns, "bulk-max-runs", "WEFT_BULK_MAX_RUNS", 0,
		fmt.Sprintf("runs one bulk job may match; a filter matching more is refused with 400 (0: %d)", gateway.DefaultBulkMaxRuns))
}

// schedulerFlags adds the flags of schedules and triggers to f: whether
// this process fires schedules (read from enabledEnv), and their limits.
func schedulerFlags(f *flags, enabledEnv string, sc *gateway.ScheduleConfig, tc *gateway.TriggerConfig) *bool {
	on := f.bool("scheduler", enabledEnv, true, "fire due schedules in this process; any number of gateways may, a claim in Postgres keeps them apart")
	f.durationVar(&sc.PollInterval, "scheduler-poll-interval", "WEFT_SCHEDULER_POLL_INTERVAL", 0, "how often the scheduler looks for due schedules (0: 1s)")
	f.durationVar(&sc.MisfireGrace, "misfire-grace", "WEFT_MISFIRE_GRACE", 0, "how late a fire may be and still count as on time; older ones are misfires (0: 1m)")
	f.intVar(&sc.MaxCatchupLimit, "max-catchup-limit", "WEFT_MAX_CATCHUP_LIMIT", 0, "the largest maxCatchup a schedule may set (0: 100)")
	f.intVar(&sc.MaxInputBytes, "max-schedule-input-bytes", "WEFT_MAX_SCHEDULE_INPUT_BYTES", 0, "largest schedule input (0: 65536)")
	f.intVar(&tc.MaxPayloadBytes, "max-trigger-payload-bytes", "WEFT_MAX_TRIGGER_PAYLOAD_BYTES", 0, "largest trigger event payload (0: 65536)")
	f.intVar(&sc.MaxPerTenant, "max-schedules-per-tenant", "WEFT_MAX_SCHEDULES_PER_TENANT", 0, "schedules one tenant may have; a create past it is refused with 409 QuotaExceeded (0: 1000)")
	f.intVar(&tc.MaxPerTenant, "max-triggers-per-tenant", "WEFT_MAX_TRIGGERS_PER_TENANT", 0, "triggers one tenant may have; a create past it is refused with 409 QuotaExceeded (0: 1000)")
	return on
}

// runGateway is `weft gateway`: the signal gateway as a process of its own
// (docs/api.md). Any number may run against one database and one NATS.
func runGateway(ctx context.Context, env *environment, args []string) error {
	f, opt := gatewayFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	keys, err := opt.loadKeys()
	if err != nil {
		return err
	}
	if err := opt.admission.open(env.logger); err != nil {
		return fmt.Errorf("weft gateway %w", err)
	}
	opt.intake.Admission = opt.admission.limits()
	o, err := newOps(ctx, env, "weft-gateway", *opt.ops, opsHint(f))
	if err != nil {
		return err
	}
	b, err := opt.urls.open(ctx, "gateway")
	if err != nil {
		return err
	}
	defer b.close()
	// The gateway writes runs and signals to Postgres; it uses no stream.
	return withOps(ctx, env, o, b.checks(), func(ctx context.Context) error {
		gw, err := gateway.New(b.pool, b.nc, gateway.Config{
			Addr: *opt.addr, Keys: keys, Intake: opt.intake,
			Logger: env.logger, MeterProvider: o.meters, TracerProvider: o.tracer,
			Schedules: opt.schedules, Triggers: opt.triggers, DisableScheduler: !*opt.scheduler,
			KeyRate: opt.keyRate, MaxBatch: opt.maxBatch, ReadAPIURL: *opt.readAPI, Bulk: opt.bulk,
			EventForm: opt.eventForm,
		})
		if err != nil {
			return err
		}
		return withAdmissionWatch(ctx, opt.admission, o.meters, func(ctx context.Context) error {
			return runUntilDone(ctx, env.logger, "gateway", gw.Run)
		})
	})
}

// keyFlags adds --api-keys and --api-keys-file to f and returns the
// function that loads the keys they name, once f is parsed.
func keyFlags(f *flags) func() (*auth.Keys, error) {
	text := f.string("api-keys", "WEFT_API_KEYS", "API keys, one `name tenant role sha256:<hex>` per line or comma")
	file := f.string("api-keys-file", "WEFT_API_KEYS_FILE", "file of API keys, one per line")
	return func() (*auth.Keys, error) { return parseKeys(*text, *file) }
}

// parseKeys reads the API keys from text or, when set, a file.
func parseKeys(text, file string) (*auth.Keys, error) {
	if text != "" && file != "" {
		return nil, errors.New("set --api-keys or --api-keys-file, not both")
	}
	var keys *auth.Keys
	var err error
	if file != "" {
		keys, err = auth.LoadKeysFile(file)
	} else {
		keys, err = auth.ParseKeys(text)
	}
	if err != nil {
		return nil, err
	}
	if keys.Len() == 0 {
		return nil, errors.New("no API keys: set WEFT_API_KEYS or --api-keys-file (a line is `name tenant role sha256:<hex>`; `weft dev` makes one for you)")
	}
	return keys, nil
}

// devTenant is the tenant of the dev token.
const devTenant = "default"

// devGateway is the dev stack's gateway: where it listens and its token.
type devGateway struct {
	url   string
	token string
	keys  *auth.Keys
	stop  func(context.Context) error
}

// startDevGateway starts the gateway of the dev stack on cfg.gatewayAddr
// with the dev token, an admin key of tenant devTenant, generated into
// <dir>/token on first start unless WEFT_DEV_TOKEN is set.
func startDevGateway(ctx context.Context, logger *slog.Logger, pool *pgxpool.Pool, nc *nats.Conn, cfg devConfig, o *ops) (devGateway, error) {
	token, _, err := auth.LoadOrCreateDevToken(filepath.Join(cfg.dir, "token"), cfg.devToken)
	if err != nil {
		return devGateway{}, fmt.Errorf("dev token: %w", err)
	}
	keys, err := auth.NewKeys(auth.Key{Name: "dev", TenantID: devTenant, Role: auth.RoleAdmin, Hash: auth.HashKey(token)})
	if err != nil {
		return devGateway{}, err
	}
	gw, err := gateway.New(pool, nc, gateway.Config{Keys: keys, Logger: logger, MeterProvider: o.meters, TracerProvider: o.tracer,
		KeyRate: cfg.keyRate, DisableScheduler: !cfg.scheduler, Intake: gateway.IntakeConfig{Admission: cfg.admission.limits()},
		Bulk: cfg.bulk, EventForm: cfg.engine.EventForm,
		ReadAPIURL: listenURL(cfg.uiAddr)})
	if err != nil {
		return devGateway{}, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.gatewayAddr)
	if err != nil {
		return devGateway{}, fmt.Errorf("gateway address %s is taken: stop what uses it or pass --gateway-addr / WEFT_DEV_GATEWAY_ADDR: %w", cfg.gatewayAddr, err)
	}
	// The stack's one watcher of the admission file, whose limits the
	// engine shares (runDev opened it), runs as long as the gateway.
	watcher := cfg.admission.watchLoop(o.meters)
	if err := watcher.Start(context.WithoutCancel(ctx)); err != nil {
		return devGateway{}, err
	}
	if err := gw.Start(context.WithoutCancel(ctx), ln); err != nil {
		return devGateway{}, errors.Join(err, watcher.Stop(ctx))
	}
	stop := func(ctx context.Context) error { return errors.Join(gw.Stop(ctx), watcher.Stop(ctx)) }
	return devGateway{url: "http://" + ln.Addr().String(), token: token, keys: keys, stop: stop}, nil
}

// listenURL is the http URL of the listen address addr ("localhost" for an
// empty host), or "" when its port is 0 and so not known yet.
func listenURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "0" {
		return ""
	}
	return "http://" + net.JoinHostPort(cmp.Or(host, "localhost"), port)
}
