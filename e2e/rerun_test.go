package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/worker"
)

// counter is an activity that counts its executions per step: it answers
// its input and the count.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) run(_ context.Context, in worker.Input) (worker.Output, error) {
	c.mu.Lock()
	c.n[in.StepID]++
	n := c.n[in.StepID]
	c.mu.Unlock()
	if strings.Contains(string(in.JSON), `"fail":true`) {
		return worker.Output{}, worker.NonRetryable("NOPE", "asked to fail")
	}
	return worker.NewOutput(map[string]any{"n": n, "input": in.JSON})
}

func (c *counter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// rerunPlan: a, then b and side; c after b. b's input reads the run's
// input and a's output, c's reads b's.
const rerunPlan = `{"planId":"rr","planVersion":"1","steps":[
	{"id":"a","activity":"count","queue":"count","input":{"v":"${{ input.v }}"}},
	{"id":"b","activity":"count","queue":"count","dependsOn":["a"],"input":{"v":"${{ input.v }}","a":"${{ steps.a.output.n }}","fail":"${{ input.?failB.orValue(false) }}"}},
	{"id":"side","activity":"count","queue":"count","dependsOn":["a"]},
	{"id":"c","activity":"count","queue":"count","dependsOn":["b"],"input":{"b":"${{ steps.b.output.input.v }}"}}]}`

// A rerun from b runs b and its descendant c again, with the new input,
// and copies a's and side's outcomes without running them; the source is
// untouched, a repeat answers the same run, and what cannot be rerun is
// refused with nothing written.
func TestRerunFromAStep(t *testing.T) {
	t.Parallel()
	st := startStack(t, noop.NewTracerProvider())
	base, db := st.url, st.db
	c := &counter{n: map[string]int{}}
	js, err := jetstream.New(st.nc)
	require.NoError(t, err)
	w, err := worker.New(js, worker.Config{Queue: "count"})
	require.NoError(t, err)
	require.NoError(t, w.Register("count", c.run))
	require.NoError(t, w.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, w.Stop(context.Background())) })
	log := eventlog.New(db.Pool)

	src := startRun(t, base, "src", `{"v":1}`)
	waitEnd(t, log, src)
	before, err := log.RunHead(t.Context(), src)
	require.NoError(t, err)

	body := `{"fromStepId":"b","input":{"v":2},"runRequestId":"rerun-1"}`
	status, res := call(t, base, http.MethodPost, "/v1/runs/"+src+"/rerun", body)
	require.Equal(t, http.StatusCreated, status, "%s", res)
	var started api.StartRunResult
	require.NoError(t, json.Unmarshal(res, &started))
	evs := waitEnd(t, log, started.RunID)
	require.Equal(t, events.RunCompleted, evs[len(evs)-1].EventType)
	require.Equal(t, map[string]int{"a": 1, "side": 1, "b": 2, "c": 2}, c.counts(), "no reused step ran again")

	snap, err := events.Project(started.RunID, evs)
	require.NoError(t, err)
	require.Equal(t, &events.RunRerun{RunID: src, FromStepID: "b"}, snap.RerunOf)
	for _, e := range evs {
		if e.EventType == events.StepScheduled {
			require.NotContains(t, []string{"a", "side"}, e.StepID, "a reused step is not scheduled")
		}
		if e.EventType == events.StepScheduled && e.StepID == "b" {
			require.JSONEq(t, `{"activity":"count","queue":"count","input":{"v":2,"a":1,"fail":false}}`, string(e.EventData),
				"b sees the new input and a's reused output")
		}
	}
	for _, st := range snap.Steps {
		if st.StepID == "a" || st.StepID == "side" {
			require.NotNil(t, st.ReusedFrom, st.StepID)
			require.Equal(t, src, st.ReusedFrom.RunID)
		} else {
			require.Nil(t, st.ReusedFrom, st.StepID)
		}
	}
	after, err := log.RunHead(t.Context(), src)
	require.NoError(t, err)
	require.Equal(t, before, after, "the source run never changes")

	status, res = call(t, base, http.MethodPost, "/v1/runs/"+src+"/rerun", body)
	require.Equal(t, http.StatusOK, status, "%s", res)
	var again api.StartRunResult
	require.NoError(t, json.Unmarshal(res, &again))
	require.Equal(t, started.RunID, again.RunID)
	require.True(t, again.Duplicate)
	status, _ = call(t, base, http.MethodPost, "/v1/runs/"+src+"/rerun", `{"fromStepId":"c","input":{"v":2},"runRequestId":"rerun-1"}`)
	require.Equal(t, http.StatusConflict, status, "the same id from another step conflicts")

	failed := startRun(t, base, "failed", `{"v":1,"failB":true}`)
	waitEnd(t, log, failed)
	status, res = call(t, base, http.MethodPost, "/v1/runs", `{"tenantId":"acme","projectId":"p","environmentId":"dev",`+
		`"planId":"gate","planVersion":"1","runRequestId":"gate","plan":{"planId":"gate","planVersion":"1","steps":[`+
		`{"id":"w","kind":"waitSignal","signal":"go"}]}}`)
	require.Equal(t, http.StatusCreated, status, "%s", res)
	running := jsonRunID(t, res)
	for name, tc := range map[string]struct {
		run, body, code string
		status          int
	}{
		"unknown step":    {src, `{"fromStepId":"zz"}`, api.CodeInvalidArgument, http.StatusBadRequest},
		"no step":         {src, `{}`, api.CodeInvalidArgument, http.StatusBadRequest},
		"failed ancestor": {failed, `{"fromStepId":"c"}`, api.CodeRerunRefused, http.StatusConflict},
		"not ended":       {running, `{"fromStepId":"w"}`, api.CodeRerunRefused, http.StatusConflict},
		"unknown run":     {events.NewRunID(), `{"fromStepId":"a"}`, api.CodeNotFound, http.StatusNotFound},
		"runId in body":   {src, `{"fromStepId":"a","runId":"` + src + `"}`, api.CodeInvalidArgument, http.StatusBadRequest},
		"unknown field":   {src, `{"fromStepId":"a","from":"a"}`, api.CodeInvalidArgument, http.StatusBadRequest},
		"reserved id":     {src, `{"fromStepId":"a","runRequestId":"x:y"}`, api.CodeInvalidArgument, http.StatusBadRequest},
	} {
		status, res := call(t, base, http.MethodPost, "/v1/runs/"+tc.run+"/rerun", tc.body)
		require.Equal(t, tc.status, status, "%s: %s", name, res)
		var e struct{ Error api.Error }
		require.NoError(t, json.Unmarshal(res, &e), name)
		require.Equal(t, tc.code, e.Error.Code, "%s: %s", name, res)
	}
	status, res = call(t, base, http.MethodPost, "/v1/runs/"+failed+"/rerun", `{"fromStepId":"b","input":{"v":3}}`)
	require.Equal(t, http.StatusCreated, status, "a rerun from the failed step itself: %s", res)
	var rerunOf string
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT event_data->'rerunOf'->>'fromStepId' FROM run_events
		WHERE run_id = $1 AND run_seq = 1`, jsonRunID(t, res)).Scan(&rerunOf))
	require.Equal(t, "b", rerunOf)
}

// jsonRunID is the runId of a start's answer.
func jsonRunID(t *testing.T, res []byte) string {
	t.Helper()
	var r api.StartRunResult
	require.NoError(t, json.Unmarshal(res, &r))
	return r.RunID
}

// startRun starts a run of rerunPlan with input over REST, under the run
// request id id, and returns its id.
func startRun(t *testing.T, base, id, input string) string {
	t.Helper()
	status, res := call(t, base, http.MethodPost, "/v1/runs", `{"tenantId":"acme","projectId":"p","environmentId":"dev",`+
		`"planId":"rr","planVersion":"1","runRequestId":"`+id+`","plan":`+rerunPlan+`,"input":`+input+`}`)
	require.Equal(t, http.StatusCreated, status, "%s", res)
	return jsonRunID(t, res)
}

// call sends body to the gateway at base as the operator and returns the
// answer's status and body.
func call(t *testing.T, base, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	req.Header.Set("Content-Type", "application/json")
	return send(t, req)
}

// waitEnd waits until run runID's log ends, and returns it.
func waitEnd(t *testing.T, log *eventlog.Store, runID string) []events.Event {
	t.Helper()
	var evs []events.Event
	require.Eventually(t, func() bool {
		var err error
		evs, err = log.EventsFetchAfter(t.Context(), runID, 0, 0)
		return err == nil && slices.ContainsFunc(evs, func(e events.Event) bool {
			return e.EventType == events.RunCompleted || e.EventType == events.RunFailed || e.EventType == events.RunCancelled
		})
	}, waitFor, 10*time.Millisecond, "run %s ends", runID)
	return evs
}
