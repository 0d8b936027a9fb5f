package e2e_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
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

// testToken is the reader's API key of the projector the client reads.
const testToken = "test-token"

// projectorRun is a run the real read API serves: Postgres, embedded
// JetStream, the outbox relay and a projector on a loopback port.
type projectorRun struct {
	client  *client.Client
	runID   string
	journal *journal.Journal
	db      *weftest.DB
}

// startProjectorRun starts the read API's stack and approves a run of
// planJSON (tenant "default") with input through the journal, so that it
// reaches the projector by the bus as a real run does.
func startProjectorRun(t *testing.T, planJSON string, input json.RawMessage) *projectorRun {
	t.Helper()
	db, nc := weftest.NewDB(t), weftest.NewNATS(t)
	js := nc.JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 64 << 20}))
	outboxtest.StartRelay(t, db.Pool, js, outbox.RelayConfig{PollInterval: 20 * time.Millisecond})

	keys, err := auth.NewKeys(auth.Key{Name: "reader", TenantID: "default", Role: auth.RoleViewer, Hash: auth.HashKey(testToken)})
	require.NoError(t, err)
	p, err := projector.New(db.Pool, nc.Conn(t), projector.Config{Keys: keys, ResyncEvery: 100 * time.Millisecond})
	require.NoError(t, err)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	c, err := client.New("http://gateway.invalid", client.WithToken(testToken), client.WithReadURL("http://"+ln.Addr().String()))
	require.NoError(t, err)
	r := &projectorRun{client: c, journal: journal.New(eventlog.New(db.Pool)), db: db}
	pl, err := plan.ParseValidated([]byte(planJSON), plan.Limits{})
	require.NoError(t, err)
	r.inTx(t, func(tx pgx.Tx) (err error) {
		r.runID, err = runstart.Approver{Journal: r.journal}.ApproveTx(t.Context(), tx,
			runstart.Request{Plan: pl, TenantID: "default", ProjectID: "p", EnvironmentID: "dev", Input: input})
		return err
	})
	return r
}

func (r *projectorRun) inTx(t *testing.T, fn func(tx pgx.Tx) error) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(t.Context(), r.db.Pool, fn))
}

// append appends step events of the run (attempt "1") through the journal.
func (r *projectorRun) append(t *testing.T, evs ...stepEvent) {
	t.Helper()
	out := make([]events.Event, len(evs))
	for i, e := range evs {
		ev, err := events.New(events.Spec{RunID: r.runID, StepID: e.step, LogicalAttemptID: "1", Type: e.typ, PlanVersion: "v1", Data: e.data})
		require.NoError(t, err)
		out[i] = ev
	}
	r.inTx(t, func(tx pgx.Tx) error {
		_, err := eventlogtest.Append(t.Context(), r.journal, tx, nil, out...)
		return err
	})
}

type stepEvent struct {
	step string
	typ  events.Type
	data any
}

// waitSeq waits until the read API's view of the run is at seq.
func (r *projectorRun) waitSeq(t *testing.T, seq int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		v, err := r.client.WaitRun(ctx, r.runID, seq-1)
		require.NoError(t, err)
		if v.LastEventSeq >= seq {
			return
		}
	}
}

// TestStepRoutesAgainstProjector: against a real projector, GetRun with
// TopSteps leaves a forEach step's children out (and counts the same
// steps done), Step reads a step's input, output and attempts and a
// child's by its id, StepChildren pages the children, and an unknown
// run is api.CodeNotFound.
func TestStepRoutesAgainstProjector(t *testing.T) {
	t.Parallel()
	r := startProjectorRun(t, `{"planId":"data","planVersion":"v1","steps":[
		{"id":"a","activity":"echo","input":{"static":1}},{"id":"each","activity":"echo","dependsOn":["a"]}]}`,
		json.RawMessage(`{"order":7}`))
	r.append(t,
		stepEvent{"a", events.StepScheduled, events.StepScheduledData{Activity: "echo"}},
		stepEvent{"a", events.StepStarted, events.StepStartedData{WorkerID: "w-1"}},
		stepEvent{"a", events.StepCompleted, events.StepCompletedData{Output: json.RawMessage(`{"sum":3}`)}},
		stepEvent{"each", events.StepScheduled, events.StepScheduledData{Activity: "echo", Input: json.RawMessage(`[1,2,3]`),
			ForEach: &events.ForEachData{Count: 3, MaxParallel: 3}}},
		stepEvent{"each[0]", events.StepScheduled, events.StepScheduledData{Activity: "echo", Input: json.RawMessage(`{"item":1}`)}},
		stepEvent{"each[1]", events.StepScheduled, events.StepScheduledData{Activity: "echo", Input: json.RawMessage(`{"item":2}`)}},
		stepEvent{"each[2]", events.StepScheduled, events.StepScheduledData{Activity: "echo", Input: json.RawMessage(`{"item":3}`)}},
		stepEvent{"each[1]", events.StepStarted, events.StepStartedData{WorkerID: "w-2"}},
	)
	r.waitSeq(t, 9)
	ctx, c := t.Context(), r.client

	all, err := c.GetRun(ctx, r.runID, client.AllSteps())
	require.NoError(t, err)
	top, err := c.GetRun(ctx, r.runID, client.TopSteps())
	require.NoError(t, err)
	require.Len(t, all.Steps, 5, "a, each and its three children")
	require.Equal(t, []string{"a", "each"}, stepIDs(top.Steps))
	require.Equal(t, all.StepsDone(), top.StepsDone())
	require.Equal(t, &events.ForEachProgress{ForEachData: events.ForEachData{Count: 3, MaxParallel: 3}, Running: 1}, top.Steps[1].ForEach)

	a, err := c.Step(ctx, r.runID, "a")
	require.NoError(t, err)
	require.JSONEq(t, `{"static":1}`, string(a.Input))
	require.Equal(t, events.InputPlan, a.InputSource)
	require.JSONEq(t, `{"sum":3}`, string(a.Output))
	require.Len(t, a.Attempts, 1)
	require.Equal(t, "w-1", a.Attempts[0].WorkerID)
	each, err := c.Step(ctx, r.runID, "each")
	require.NoError(t, err)
	require.JSONEq(t, `[1,2,3]`, string(each.Input))
	require.Equal(t, &events.ForEachData{Count: 3, MaxParallel: 3}, each.ForEach)
	child, err := c.Step(ctx, r.runID, events.ChildStepID("each", 1))
	require.NoError(t, err)
	require.JSONEq(t, `{"item":2}`, string(child.Input))
	require.Equal(t, events.StepStatusRunning, child.Attempts[0].Status)
	never, err := c.Step(ctx, r.runID, "never")
	require.NoError(t, err)
	require.Equal(t, &events.StepDetail{StepID: "never", Attempts: []events.StepAttempt{}}, never)

	page, err := c.StepChildren(ctx, r.runID, "each", client.ChildFilter{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"each[0]", "each[1]"}, stepIDs(page.Children))
	require.True(t, page.More)
	require.Equal(t, 1, page.NextAfterIndex)
	page, err = c.StepChildren(ctx, r.runID, "each", client.ChildFilter{FromIndex: page.NextAfterIndex + 1, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"each[2]"}, stepIDs(page.Children))
	require.False(t, page.More)
	require.Equal(t, 2, page.NextAfterIndex)

	_, err = c.Step(ctx, events.NewRunID(), "a")
	require.True(t, client.IsCode(err, api.CodeNotFound), "got %v", err)
	_, err = c.StepChildren(ctx, events.NewRunID(), "each", client.ChildFilter{})
	require.True(t, client.IsCode(err, api.CodeNotFound), "got %v", err)
}

func stepIDs(steps []events.StepSnapshot) []string {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.StepID
	}
	return ids
}
