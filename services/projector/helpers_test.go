package projector_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/outbox/outboxtest"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/projector"
)

// TestMain runs the tests, or, in a crash test's child process, its projector.
func TestMain(m *testing.M) { weftest.MainWithChild(m, childDBEnv, crashChild) }

const waitFor = 30 * time.Second

// API tokens of the tests: tenant "acme" reader and operator, and a
// reader of tenant "other".
const (
	readerToken = "reader-token-0123456789"
	otherToken  = "other-token-0123456789"
	// operatorToken is an operator's key of tenant: it may start runs.
	operatorToken = "operator-token-0123456789"
	tenant        = "acme"
)

func testKeys(t *testing.T) *auth.Keys {
	t.Helper()
	keys, err := auth.NewKeys(
		auth.Key{Name: "reader", TenantID: tenant, Role: auth.RoleViewer, Hash: auth.HashKey(readerToken)},
		auth.Key{Name: "other", TenantID: "other", Role: auth.RoleViewer, Hash: auth.HashKey(otherToken)},
		auth.Key{Name: "operator", TenantID: tenant, Role: auth.RoleOperator, Hash: auth.HashKey(operatorToken)})
	require.NoError(t, err)
	return keys
}

// stack is one test's Postgres, JetStream, outbox relay and projectors.
type stack struct {
	db      *weftest.DB
	nats    *weftest.NATS
	js      jetstream.JetStream
	log     *eventlog.Store
	journal *journal.Journal
	relay   *outbox.Relay
	logs    *weftest.Buffer
	metrics *sdkmetric.ManualReader
	// url is the base URL of the last projector started with serve.
	url string
}

// newStack starts Postgres, JetStream and the outbox relay.
func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{db: weftest.NewDB(t), nats: weftest.NewNATS(t), logs: &weftest.Buffer{}, metrics: sdkmetric.NewManualReader()}
	s.js = s.nats.JetStream(t)
	s.log = eventlog.New(s.db.Pool)
	s.journal = journal.New(s.log)
	require.NoError(t, streams.Ensure(t.Context(), s.js, streams.Config{MaxBytes: 256 << 20}))
	s.startRelay(t)
	return s
}

// startRelay starts the outbox relay; it stops when the test ends or at
// stopRelay.
func (s *stack) startRelay(t *testing.T) {
	t.Helper()
	s.relay = outboxtest.StartRelay(t, s.db.Pool, s.js, outbox.RelayConfig{PollInterval: 50 * time.Millisecond})
}

func (s *stack) stopRelay(t *testing.T) {
	t.Helper()
	if s.relay != nil {
		require.NoError(t, s.relay.Stop(context.Background()))
		s.relay = nil
	}
}

// config returns cfg with the test keys and fast loops.
func config(t *testing.T, cfg projector.Config) projector.Config {
	t.Helper()
	cfg.Keys = testKeys(t)
	if cfg.ResyncEvery == 0 {
		cfg.ResyncEvery = 100 * time.Millisecond
	}
	return cfg
}

// serve runs a projector serving on a loopback port until the test ends
// or the returned stop is called, and sets s.url.
func (s *stack) serve(t *testing.T, cfg projector.Config) (stop func()) {
	t.Helper()
	return s.serveWith(t, cfg, sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.metrics)))
}

// serveWith is serve with the projector's metrics going to mp.
func (s *stack) serveWith(t *testing.T, cfg projector.Config, mp metric.MeterProvider) (stop func()) {
	t.Helper()
	cfg.MeterProvider = mp
	cfg.Logger = slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := projector.New(s.db.Pool, s.nats.Conn(t), config(t, cfg))
	require.NoError(t, err)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}

// approve appends a run's RunApproved (tenant acme) through the journal,
// so it reaches the bus, and returns the run id.
func (s *stack) approve(t *testing.T, planID string) string {
	t.Helper()
	return s.approveWith(t, `{"planId":"`+planID+`","planVersion":"v1","steps":[
		{"id":"a","activity":"echo"},{"id":"b","activity":"echo","dependsOn":["a"]}]}`, nil)
}

// approveWith approves a run of the plan planJSON with the run input
// input (tenant acme), as approve does, and returns the run id.
func (s *stack) approveWith(t *testing.T, planJSON string, input json.RawMessage) string {
	t.Helper()
	p, err := plan.ParseValidated([]byte(planJSON), plan.Limits{})
	require.NoError(t, err)
	var runID string
	err = pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		runID, err = runstart.Approver{Journal: s.journal}.ApproveTx(t.Context(), tx,
			runstart.Request{Plan: p, TenantID: tenant, ProjectID: "proj", EnvironmentID: "dev", Input: input})
		return err
	})
	require.NoError(t, err)
	return runID
}

// step builds an event of the run: a step event when stepID is set.
func step(t *testing.T, runID, stepID string, typ events.Type, data any) events.Event {
	t.Helper()
	attempt := ""
	if stepID != "" {
		attempt = "1"
	}
	ev, err := events.New(events.Spec{RunID: runID, StepID: stepID, LogicalAttemptID: attempt, Type: typ,
		PlanVersion: "v1", Data: data})
	require.NoError(t, err)
	return ev
}

// appendBus appends events through the journal: log and outbox.
func (s *stack) appendBus(t *testing.T, evs ...events.Event) {
	t.Helper()
	err := pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		_, err := eventlogtest.Append(t.Context(), s.journal, tx, nil, evs...)
		return err
	})
	require.NoError(t, err)
}

// appendLogOnly appends events to the log without an outbox row: the bus
// never carries them. It returns them as persisted.
func (s *stack) appendLogOnly(t *testing.T, evs ...events.Event) []events.Event {
	t.Helper()
	out := make([]events.Event, len(evs))
	for i, ev := range evs {
		res, err := eventlogtest.AppendLog(t.Context(), s.log, s.db.Pool, nil, ev)
		require.NoError(t, err)
		ev.RunSeq, ev.PersistedAt = res[0].RunSeq, res[0].PersistedAt
		out[i] = ev
	}
	return out
}

// appendLogAt writes ev into the log at runSeq seq directly, whatever the
// run's head, and moves the head up to seq: it can leave a gap in the log,
// which the append function never does, so that a test can hold a run
// STALE. It returns ev as stored.
func (s *stack) appendLogAt(t *testing.T, ev events.Event, seq int64) events.Event {
	t.Helper()
	ev.RunSeq = seq
	err := s.db.Pool.QueryRow(t.Context(), `
INSERT INTO run_events (run_id, run_seq, event_id, step_id, logical_attempt_id, event_type, event_data,
                        idempotency_key, emitted_at, schema_version)
VALUES ($1, $2, $3, nullif($4, ''), nullif($5, ''), $6, $7, $8, $9, $10)
RETURNING persisted_at`, ev.RunID, seq, ev.EventID, ev.StepID, ev.LogicalAttemptID, string(ev.EventType),
		[]byte(ev.EventData), ev.IdempotencyKey, ev.EmittedAt, ev.SchemaVersion).Scan(&ev.PersistedAt)
	require.NoError(t, err)
	_, err = s.db.Pool.Exec(t.Context(), `UPDATE run_heads SET head_seq = greatest(head_seq, $2) WHERE run_id = $1`, ev.RunID, seq)
	require.NoError(t, err)
	ev.PersistedAt = ev.PersistedAt.UTC()
	return ev
}

// openLogGap makes the run STALE the only way a verified bus can: runSeq
// afterSeq+2 reaches the log without afterSeq+1, and the bus. It returns
// the event.
func (s *stack) openLogGap(t *testing.T, runID string, afterSeq int64) events.Event {
	t.Helper()
	ahead := s.appendLogAt(t, step(t, runID, "a", events.StepScheduled, events.StepScheduledData{Activity: "echo"}), afterSeq+2)
	s.publish(t, ahead)
	return ahead
}

// publish puts ev on the bus directly, as a fresh message.
func (s *stack) publish(t *testing.T, ev events.Event) {
	t.Helper()
	subject, err := streams.EventSubject(ev.RunID, ev.EventType)
	require.NoError(t, err)
	data, err := json.Marshal(ev)
	require.NoError(t, err)
	_, err = s.js.Publish(t.Context(), subject, data, jetstream.WithMsgID(events.NewRunID()))
	require.NoError(t, err)
}

// get GETs path on the projector with token and decodes a 200 answer into
// out (when not nil); it returns the status code.
func (s *stack) get(t *testing.T, token, path string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	if out != nil && resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// run reads the run's view, or returns ok false when it is not there yet.
func (s *stack) run(t *testing.T, runID string) (api.RunView, bool) {
	t.Helper()
	var v api.RunView
	return v, s.get(t, readerToken, "/v1/runs/"+runID, &v) == http.StatusOK
}

// waitRun waits until the run's view satisfies cond and returns it.
func (s *stack) waitRun(t *testing.T, runID string, cond func(api.RunView) bool, what string) api.RunView {
	t.Helper()
	var v api.RunView
	require.Eventually(t, func() bool {
		got, ok := s.run(t, runID)
		v = got
		return ok && cond(got)
	}, waitFor, 10*time.Millisecond, "run %s: %s; last view: %+v", runID, what, v)
	return v
}

// atSeq is a waitRun condition: watermark seq and no gap.
func atSeq(seq int64) func(api.RunView) bool {
	return func(v api.RunView) bool { return v.LastEventSeq == seq && !v.Stale }
}

// requireMatchesLog asserts the run's stored snapshot is what the reducer
// builds from the whole log: nothing skipped, nothing applied twice.
func (s *stack) requireMatchesLog(t *testing.T, v api.RunView) {
	t.Helper()
	evs, err := s.log.EventsFetchAfter(t.Context(), v.RunID, 0, 0)
	require.NoError(t, err)
	want, err := events.Project(v.RunID, evs)
	require.NoError(t, err)
	requireSameSnapshot(t, want, v.RunSnapshot)
}

// requireSameSnapshot compares snapshots by their JSON.
func requireSameSnapshot(t *testing.T, want, got events.RunSnapshot) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}
