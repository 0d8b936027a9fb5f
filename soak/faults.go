package soak

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/streams"
)

// Fault kinds, selectable with SOAK_FAULTS. "kill" kills (SIGKILL) and
// restarts one service process of any kind; "kill-<kind>" only that kind.
var faultKinds = []string{"kill-gateway", "kill-engine", "kill-relay", "kill-worker", "kill-projector",
	"nats", "db", "consumer", "snapshots"}

// parseFaults expands a SOAK_FAULTS list ("all", "kill", "nats", …).
func parseFaults(spec string) ([]string, error) {
	if spec == "" || spec == "all" {
		return slices.Clone(faultKinds), nil
	}
	if spec == "none" {
		return nil, nil
	}
	var out []string
	for f := range strings.SplitSeq(spec, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "kill":
			for _, k := range faultKinds {
				if strings.HasPrefix(k, "kill-") {
					out = append(out, k)
				}
			}
		case slices.Contains(faultKinds, f):
			out = append(out, f)
		default:
			return nil, fmt.Errorf("SOAK_FAULTS: unknown fault %q (known: all, none, kill, %s)", f, strings.Join(faultKinds, ", "))
		}
	}
	return out, nil
}

// faultRec is one injected fault and what it cost.
type faultRec struct {
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	At     time.Time `json:"at"`
	// RecoveryMs is how long after the fault the system made progress
	// again (see progress); -1 when it did not within the bound.
	RecoveryMs int64  `json:"recoveryMs"`
	Error      string `json:"error,omitempty"`
	// ReadyWhileMissing names the services whose /readyz answered 200
	// while the consumer they keep was missing (consumer faults only).
	ReadyWhileMissing []string `json:"readyWhileMissing,omitempty"`
}

// injector injects seeded faults one at a time.
type injector struct {
	top    *topology
	rng    *rand.Rand
	kinds  []string
	bound  time.Duration // how long to wait for progress after a fault
	logger *slog.Logger
	faults []faultRec
	// natsKills counts "nats" faults, which kill a cluster's roles in turn.
	natsKills int
}

// run injects faults until `until`: a pause of 3–12 s, a fault, a wait for
// progress; each step bounded.
func (in *injector) run(ctx context.Context, until time.Time) {
	if len(in.kinds) == 0 {
		return
	}
	for time.Now().Before(until) && ctx.Err() == nil && len(in.kinds) > 0 {
		pause(ctx, in.rng, 3000, 12000)
		if !time.Now().Before(until) || ctx.Err() != nil {
			return
		}
		kind := in.kinds[in.rng.IntN(len(in.kinds))]
		rec := faultRec{Kind: kind, At: time.Now(), RecoveryMs: -1}
		target, progress, err := in.inject(ctx, kind)
		rec.Target = target
		if kind == "consumer" && err == nil {
			rec.ReadyWhileMissing = in.readyWhileMissing(ctx, target)
		}
		if err != nil {
			rec.Error = err.Error()
		} else if at, ok := in.waitProgress(ctx, progress, rec.At); ok {
			rec.RecoveryMs = at.Sub(rec.At).Milliseconds()
		}
		in.logger.InfoContext(ctx, "fault", "kind", kind, "target", target, "recovery_ms", rec.RecoveryMs, "err", rec.Error)
		in.faults = append(in.faults, rec)
	}
}

// Progress probes, end to end: a run approved after the fault has ended in
// the log, or in its snapshot (the read model).
const (
	progressRuns = `SELECT EXISTS (SELECT 1 FROM run_events a JOIN run_events e ON e.run_id = a.run_id
		WHERE a.event_type = 'RunApproved' AND a.persisted_at > $1
		AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled'))`
	progressSnapshots = `SELECT EXISTS (SELECT 1 FROM run_events a JOIN run_snapshots s ON s.run_id = a.run_id
		WHERE a.event_type = 'RunApproved' AND a.persisted_at > $1 AND s.status IN ('COMPLETED', 'FAILED', 'CANCELLED'))`
)

// inject injects one fault and returns its target and the progress probe
// that tells the system has recovered from it.
func (in *injector) inject(ctx context.Context, kind string) (string, string, error) {
	switch {
	case strings.HasPrefix(kind, "kill-"):
		svc := strings.TrimPrefix(kind, "kill-")
		ps := in.top.procs.ofKind(svc)
		p := ps[in.rng.IntN(len(ps))]
		probe := progressRuns
		if svc == "projector" {
			probe = progressSnapshots
		}
		return p.name, probe, in.killRestart(ctx, p)
	case kind == "nats":
		n, target, err := in.natsVictim(ctx, in.natsKills)
		in.natsKills++
		if err != nil {
			return target, progressRuns, err
		}
		return target, progressRuns, in.killRestart(ctx, n.proc)
	case kind == pgFailoverKind: // one standby: at most once
		in.kinds = slices.DeleteFunc(slices.Clone(in.kinds), func(k string) bool { return k == pgFailoverKind })
		return "postgres primary", progressRuns, in.top.pg.failover(ctx)
	case kind == "db":
		n, err := in.cutDB(ctx)
		return fmt.Sprintf("%d backends", n), progressRuns, err
	case kind == "consumer":
		return in.deleteConsumer(ctx)
	case kind == "snapshots":
		return "run_snapshots", progressSnapshots, in.wipeSnapshots(ctx)
	}
	return "", "", fmt.Errorf("unknown fault %q", kind)
}

// killRestart kills p with SIGKILL, waits 0.3–3 s and starts it again.
func (in *injector) killRestart(ctx context.Context, p *proc) error {
	p.kill9()
	pause(ctx, in.rng, 300, 3000)
	return in.top.restart(ctx, p)
}

// cutDB terminates every backend of the services' roles.
func (in *injector) cutDB(ctx context.Context) (int, error) {
	var n int
	err := in.top.admin.QueryRow(ctx, `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND usename LIKE 'weft\_%' AND pid <> pg_backend_pid()`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("cut database connections: %w", err)
	}
	return n, nil
}

// ownerOf is the service kind that keeps each durable consumer.
var ownerOf = map[string]string{"engine-events-0": "engine", "engine-results-0": "engine",
	"tasks-default": "worker", "projector": "projector"}

// readyWhileMissing returns the owners of consumer whose /readyz answered
// 200 while it was missing: missing before the answer and still missing
// after it. A consumer created again meanwhile is no finding.
func (in *injector) readyWhileMissing(ctx context.Context, consumer string) []string {
	stream := ""
	for _, c := range consumers {
		if c[1] == consumer {
			stream = c[0]
		}
	}
	nc, err := nats.Connect(in.top.natsURL("soak"), nats.Name("weft-soak"))
	if err != nil {
		return nil
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil
	}
	missing := func() bool {
		_, err := js.Consumer(ctx, stream, consumer)
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	var out []string
	for _, p := range in.top.procs.ofKind(ownerOf[consumer]) {
		if missing() && probe(ctx, hc, in.top.ops[p.name]+"/readyz") == http.StatusOK && missing() {
			out = append(out, p.name)
		}
	}
	return out
}

// consumers are the durable consumers the services keep, by stream.
var consumers = [][2]string{
	{streams.EventsStream, "engine-events-0"}, {streams.ResultsStream, "engine-results-0"},
	{streams.TasksStream, "tasks-default"}, {streams.EventsStream, "projector"},
}

// deleteConsumer deletes one of the services' durable consumers as the
// soak's admin NATS user.
func (in *injector) deleteConsumer(ctx context.Context) (string, string, error) {
	c := consumers[in.rng.IntN(len(consumers))]
	probe := progressRuns
	if c[1] == "projector" {
		probe = progressSnapshots
	}
	nc, err := nats.Connect(in.top.natsURL("soak"), nats.Name("weft-soak"))
	if err != nil {
		return c[1], probe, fmt.Errorf("connect as soak: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return c[1], probe, fmt.Errorf("jetstream: %w", err)
	}
	if err := js.DeleteConsumer(ctx, c[0], c[1]); err != nil {
		return c[1], probe, fmt.Errorf("delete consumer %s: %w", c[1], err)
	}
	return c[1], probe, nil
}

// wipeSnapshots deletes every snapshot and restarts the projector, as an
// operator restoring an empty read model would.
func (in *injector) wipeSnapshots(ctx context.Context) error {
	if _, err := in.top.admin.Exec(ctx, `DELETE FROM run_snapshots`); err != nil {
		return fmt.Errorf("wipe snapshots: %w", err)
	}
	for _, p := range in.top.procs.ofKind("projector") {
		if err := in.killRestart(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// waitProgress polls probe (with the fault's time) until it holds or the
// bound passes; it returns when it first held.
func (in *injector) waitProgress(ctx context.Context, probe string, since time.Time) (time.Time, bool) {
	var at time.Time
	err := poll(ctx, in.bound, func() (bool, error) {
		var ok bool
		if err := in.top.admin.QueryRow(ctx, probe, since).Scan(&ok); err != nil {
			return false, nil //nolint:nilerr // the database may be restarting its connections: try again
		}
		if ok {
			at = time.Now()
		}
		return ok, nil
	})
	return at, err == nil
}
