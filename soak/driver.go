package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/pkg/plan"
)

// startRec is what the driver knows of one run request.
type startRec struct {
	Kind         string
	RunRequestID string
	RunID        string // "" unless a start was acknowledged (2xx)
}

// signalRec is one signal the driver sent.
type signalRec struct {
	RunID, Name, ID string
	Acked           bool   // a 2xx answer saying accepted
	StorageKey      string // of the first 2xx answer
}

// ledger is what the driver got answers for. Safe for concurrent use.
type ledger struct {
	mu         sync.Mutex
	starts     []*startRec
	signals    []*signalRec
	anomalies  []string // answers that contradict an earlier answer
	startErrs  int
	signalErrs int
}

func (l *ledger) addStart(s *startRec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, s)
}

func (l *ledger) addSignal(s *signalRec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.signals = append(l.signals, s)
}

func (l *ledger) anomaly(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.anomalies = append(l.anomalies, fmt.Sprintf(format, args...))
}

func (l *ledger) failed(start bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if start {
		l.startErrs++
	} else {
		l.signalErrs++
	}
}

// driver starts a seeded mix of runs through the gateways and signals them.
type driver struct {
	seed    uint64
	rate    float64 // run starts per second
	clients []*client.Client
	ledger  *ledger
	logger  *slog.Logger
}

// newClients returns one client per gateway, retrying 5xx and connection
// errors a bounded number of times.
func newClients(gateways []string, readURL string) ([]*client.Client, error) {
	var out []*client.Client
	for _, g := range gateways {
		c, err := client.New(g, client.WithToken(token), client.WithReadURL(readURL),
			client.WithRetry(client.RetryPolicy{MaxAttempts: 8, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second}))
		if err != nil {
			return nil, fmt.Errorf("client of %s: %w", g, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// maxInFlight bounds the driver's goroutines, each one run's script.
const maxInFlight = 32

// run starts runs at d.rate until `until`, then waits for every script
// (each bounded by scriptBound) to end.
func (d *driver) run(ctx context.Context, until time.Time) {
	const scriptBound = 2 * time.Minute
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / d.rate))
	defer tick.Stop()
	maxRuns := int(time.Until(until).Seconds()*d.rate) + 1
	for i := 0; i < maxRuns && time.Now().Before(until); i++ {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			sctx, cancel := context.WithTimeout(ctx, scriptBound)
			defer cancel()
			d.script(sctx, uint64(i))
		}()
	}
	wg.Wait()
}

// script starts run i and plays its kind's signals. Its choices come from
// the seed and i alone.
func (d *driver) script(ctx context.Context, i uint64) {
	rng := rand.New(rand.NewPCG(d.seed, i)) //nolint:gosec // a seeded soak, not cryptography
	kind := pickKind(rng)
	rr := fmt.Sprintf("soak-%d-%d", d.seed, i)
	rec := &startRec{Kind: kind, RunRequestID: rr}
	d.ledger.addStart(rec)
	req := api.StartRunRequest{TenantID: "default", ProjectID: "soak", EnvironmentID: "soak",
		PlanID: planID(kind), PlanVersion: "1", RunRequestID: rr, Plan: json.RawMessage(planJSON(kind, rr))}
	res, err := d.pick(rng).StartRun(ctx, req)
	if err != nil {
		d.ledger.failed(true)
		d.logger.DebugContext(ctx, "start failed", "run_request_id", rr, "err", err)
		return
	}
	d.ledger.mu.Lock()
	rec.RunID = res.RunID
	d.ledger.mu.Unlock()
	if rng.Float64() < 0.15 { // the same request again: the same run, marked duplicate
		again, err := d.pick(rng).StartRun(ctx, req)
		if err == nil && (again.RunID != res.RunID || !again.Duplicate) {
			d.ledger.anomaly("start %s resent: run %s (duplicate %v), first %s", rr, again.RunID, again.Duplicate, res.RunID)
		}
	}
	switch kind {
	case kindWait:
		pause(ctx, rng, 200, 3000)
		d.signal(ctx, rng, res.RunID, "go", "go-"+rr)
	case kindPause:
		// RESUME right after PAUSE's 202, as a user would; sometimes twice.
		// With two engines the two may be delivered to different engines.
		pause(ctx, rng, 200, 1500)
		for n := range 1 + rng.IntN(2) {
			if !d.signal(ctx, rng, res.RunID, plan.SignalPause, fmt.Sprintf("pause-%s-%d", rr, n)) ||
				!d.signal(ctx, rng, res.RunID, plan.SignalResume, fmt.Sprintf("resume-%s-%d", rr, n)) {
				break
			}
		}
	case kindCancel:
		pause(ctx, rng, 200, 3000)
		d.signal(ctx, rng, res.RunID, plan.SignalCancel, "cancel-"+rr)
	}
	if rng.Float64() < 0.1 { // a custom signal no step waits for
		d.signal(ctx, rng, res.RunID, "poke", "poke-"+rr)
	}
}

// signal sends a signal, and with some chance sends it again with the
// same id; it reports whether the first was acknowledged.
func (d *driver) signal(ctx context.Context, rng *rand.Rand, runID, name, id string) bool {
	rec := &signalRec{RunID: runID, Name: name, ID: id}
	d.ledger.addSignal(rec)
	req := api.SignalRequest{SignalName: name, SignalID: id}
	if !plan.IsControlSignal(name) { // a control signal's payload holds only its own fields
		req.Payload = json.RawMessage(`{"by":"soak"}`)
	}
	res, err := d.pick(rng).Signal(ctx, runID, req)
	if err != nil {
		d.ledger.failed(false)
		d.logger.DebugContext(ctx, "signal failed", "run_id", runID, "signal", name, "err", err)
		return false
	}
	d.ledger.mu.Lock()
	rec.Acked, rec.StorageKey = res.Accepted, res.SignalStorageKey
	d.ledger.mu.Unlock()
	if rng.Float64() < 0.2 {
		again, err := d.pick(rng).Signal(ctx, runID, req)
		if err == nil && again.SignalStorageKey != res.SignalStorageKey {
			d.ledger.anomaly("signal %s %s of run %s resent: storage key %s, first %s", name, id, runID,
				again.SignalStorageKey, res.SignalStorageKey)
		}
	}
	return true
}

// pick draws one of the gateways' clients.
func (d *driver) pick(rng *rand.Rand) *client.Client { return d.clients[rng.IntN(len(d.clients))] }

// pause waits between lo and hi milliseconds, drawn from rng, or until ctx
// ends.
func pause(ctx context.Context, rng *rand.Rand, lo, hi int) {
	_ = periodic.Sleep(ctx, time.Duration(lo+rng.IntN(hi-lo+1))*time.Millisecond)
}

// finalize sends what a run left waiting by the driver's failures needs to
// end: "go" to a wait run that has accepted none, RESUME to a run whose
// last accepted PAUSE/RESUME is a PAUSE. It reads the log only, and its
// signal ids are deterministic, so calling it again sends nothing new.
// A run that stays unfinished after it is the checker's business.
func finalize(ctx context.Context, t *topology, c *client.Client) error {
	rows, err := t.admin.Query(ctx, `
		SELECT a.run_id::text, a.event_data->>'planId',
		       coalesce(array_agg(s.event_data->>'signalName' ORDER BY s.run_seq) FILTER (WHERE s.run_id IS NOT NULL), '{}')
		FROM run_events a
		LEFT JOIN run_events s ON s.run_id = a.run_id AND s.event_type = 'SignalAccepted'
		WHERE a.event_type = 'RunApproved' AND NOT EXISTS (
			SELECT 1 FROM run_events e WHERE e.run_id = a.run_id
			AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled'))
		GROUP BY 1, 2`)
	if err != nil {
		return fmt.Errorf("finalize: %w", err)
	}
	var needs []need
	for rows.Next() {
		var run, pid string
		var names []string
		if err := rows.Scan(&run, &pid, &names); err != nil {
			rows.Close()
			return fmt.Errorf("finalize: %w", err)
		}
		needs = append(needs, neededSignals(run, kindOf(pid), names)...)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("finalize: %w", err)
	}
	var errs []error
	for _, n := range needs {
		if _, err := c.Signal(ctx, n.run, api.SignalRequest{SignalName: n.name, SignalID: n.id}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// need is a signal finalize sends.
type need struct{ run, name, id string }

// neededSignals is what finalize sends one unfinished run.
func neededSignals(run, kind string, accepted []string) []need {
	var out []need
	goSeen, pauses, lastControl := false, 0, ""
	for _, n := range accepted {
		switch n {
		case "go":
			goSeen = true
		case plan.SignalPause:
			pauses++
			lastControl = n
		case plan.SignalResume:
			lastControl = n
		}
	}
	if kind == kindWait && !goSeen {
		out = append(out, need{run, "go", "go-final-" + run})
	}
	if lastControl == plan.SignalPause {
		out = append(out, need{run, plan.SignalResume, fmt.Sprintf("resume-final-%s-%d", run, pauses)})
	}
	return out
}
