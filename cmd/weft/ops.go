package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/traceboot"
	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/engine"
	"github.com/weftrun/weft/services/projector"
)

// opsOff is the --ops-addr value that turns the ops listener off.
const opsOff = "off"

// Default ops listener addresses, one port per command so that the
// services of one host do not collide.
const (
	devOpsAddr       = "127.0.0.1:9180"
	gatewayOpsAddr   = ":9181"
	projectorOpsAddr = ":9182"
	engineOpsAddr    = ":9183"
	workerOpsAddr    = ":9184"
	relayOpsAddr     = ":9185"
	maintainOpsAddr  = ":9186"
)

// opsFlag adds --ops-addr, read from envKey, to f.
func opsFlag(f *flags, envKey, def string) *string {
	return f.stringDefault("ops-addr", envKey, def,
		"listen address of /healthz, /readyz and /metrics; "+opsOff+" turns them off")
}

// opsHint names --ops-addr and the variable opsFlag read it from, for the
// error when its address is taken: "--ops-addr or WEFT_ENGINE_OPS_ADDR".
func opsHint(f *flags) string { return "--ops-addr or " + f.envKeys["ops-addr"] }

// ops is a command's telemetry and operations listener: /healthz, /readyz
// (its dependencies' checks) and /metrics (the Prometheus form of meters),
// and the tracer provider its services share.
type ops struct {
	addr, hint string
	// meters is the command's MeterProvider: hand it to the services the
	// command runs, and their instruments are served at /metrics.
	meters metric.MeterProvider
	// metrics serves meters' instruments.
	metrics http.Handler
	// tracer is the command's TracerProvider, set up from the standard
	// OTEL_* variables (internal/boot/traceboot): hand it to every service.
	tracer trace.TracerProvider
	// flushTraces exports the spans still queued; closeTraces calls it.
	flushTraces func(context.Context) error
	// pprof says whether the listener serves Go's profiles (pprofEnv).
	pprof bool
}

// pprofEnv, set to "true", makes a command's ops listener serve Go's
// runtime profiles at /debug/pprof/ (net/http/pprof), for a CPU profile of
// a running service. Off by default: a profile costs the process CPU while
// it is taken, and the listener has no authentication.
const pprofEnv = "WEFT_PPROF"

// newOps makes the command's MeterProvider and TracerProvider (service is
// the traces' service.name) for an ops listener on addr (opsOff: none).
// hint names the flag and variable that set addr, for the error when addr
// is taken. Nothing listens until serve; call closeTraces when the
// command's services have stopped.
func newOps(ctx context.Context, env *environment, service, addr, hint string) (*ops, error) {
	mp, handler, err := metrics.New()
	if err != nil {
		return nil, err
	}
	tp, flush, err := traceboot.NewTracerProvider(ctx, service, env.getenv)
	if err != nil {
		return nil, err
	}
	return &ops{addr: addr, hint: hint, meters: mp, metrics: handler, tracer: tp, flushTraces: flush,
		pprof: env.getenv(pprofEnv) == "true"}, nil
}

// closeTraces flushes the spans not yet exported, within ctx.
func (o *ops) closeTraces(ctx context.Context) error {
	if err := o.flushTraces(ctx); err != nil {
		return fmt.Errorf("flush traces: %w", err)
	}
	return nil
}

// handler serves /healthz and /readyz from probes, /metrics, and with
// o.pprof, /debug/pprof/.
func (o *ops) handler(probes *health.Probes) http.Handler {
	mux := http.NewServeMux()
	probes.Register(mux)
	mux.Handle("GET /metrics", o.metrics)
	if o.pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// serve listens on the ops address and serves it with checks in the
// background (a startstop.Loop) until the returned stop is called; stop drains it within its
// context. It returns the listener's base URL, "" when the listener is off.
func (o *ops) serve(ctx context.Context, logger *slog.Logger, checks []health.Check) (string, func(context.Context) error, error) {
	if o.addr == opsOff {
		return "", func(context.Context) error { return nil }, nil
	}
	probes, err := health.New(0, checks...)
	if err != nil {
		return "", nil, err
	}
	ln, err := httpserve.Listen(ctx, o.addr, "ops", o.hint)
	if err != nil {
		return "", nil, err
	}
	h := o.handler(probes)
	listener := &startstop.Loop{Run: func(ctx context.Context) error {
		return httpserve.Serve(ctx, ln, h, httpserve.Limits{}, "ops", logger)
	}}
	if err := listener.Start(context.WithoutCancel(ctx)); err != nil {
		return "", nil, err
	}
	return "http://" + ln.Addr().String(), listener.Stop, nil
}

// withOps serves the ops listener with checks while run runs, then stops
// it and flushes the traces within shutdownTimeout. A run ended by ctx's
// cancellation is a clean stop.
func withOps(ctx context.Context, env *environment, o *ops, checks []health.Check, run func(context.Context) error) error {
	_, stop, err := o.serve(ctx, env.logger, checks)
	if err != nil {
		return err
	}
	err = run(ctx)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if stopErr := stop(stopCtx); stopErr != nil {
		err = errors.Join(err, fmt.Errorf("ops listener: %w", stopErr))
	}
	return errors.Join(err, o.closeTraces(stopCtx))
}

// consumerRef names a durable consumer a service keeps (streams.Keeper),
// for its readiness check.
type consumerRef struct{ stream, durable string }

// engineConsumers are the durable consumers the engines' readiness
// checks: those of partition 0, which one engine or another consumes
// while any runs (each engine consumes only its partitions, so no check
// can ask for all of them).
func engineConsumers() []consumerRef {
	return []consumerRef{
		{streams.EventsStream, engine.PartitionConsumer(streams.EventsStream, 0)},
		{streams.ResultsStream, engine.PartitionConsumer(streams.ResultsStream, 0)},
	}
}

// projectorConsumers are the durable consumers every projector shares.
func projectorConsumers() []consumerRef {
	return []consumerRef{{streams.EventsStream, projector.Consumer}}
}

// workerConsumers are the durable consumers of the workers of queue (empty:
// the default queue).
func workerConsumers(queue string) ([]consumerRef, error) {
	cc, err := streams.TaskConsumer(cmp.Or(queue, worker.DefaultQueue), 0)
	if err != nil {
		return nil, err
	}
	return []consumerRef{{streams.TasksStream, cc.Durable}}, nil
}

// consumerChecks returns a readiness check per consumer: /readyz answers
// 503 naming "consumer <durable>" while one is missing.
func consumerChecks(b *backends, consumers ...consumerRef) []health.Check {
	cs := make([]health.Check, 0, len(consumers))
	for _, c := range consumers {
		cs = append(cs, health.Consumer(b.js, c.stream, c.durable))
	}
	return cs
}
