package projector_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector"
)

// TestStepDetail: GET /v1/runs/{runId}/steps/{stepId} answers a step's
// input (resolved, or the plan's static one), output, skip reason and
// attempts from the log; a forEach child by its escaped id; nothing of
// another tenant's run. The run's view carries its input and a forEach
// step's progress, and a forEach step counts once in the runs list.
func TestStepDetail(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approveWith(t, `{"planId":"data","planVersion":"v1","steps":[
		{"id":"a","activity":"echo","input":{"static":1}},{"id":"b","activity":"echo","dependsOn":["a"]}]}`,
		json.RawMessage(`{"order":7}`))
	worker := func(id string) events.StepStartedData { return events.StepStartedData{WorkerID: id} }
	s.appendBus(t,
		step(t, runID, "", events.RunStarted, nil),
		step(t, runID, "a", events.StepScheduled, events.StepScheduledData{Activity: "echo"}),
		step(t, runID, "a", events.StepStarted, worker("w-1")),
		step(t, runID, "a", events.StepCompleted, events.StepCompletedData{Output: json.RawMessage(`{"sum":3}`)}),
		step(t, runID, "b", events.StepSkipped, map[string]string{"reason": "CONDITION_FALSE", "condition": "b"}),
		step(t, runID, "each", events.StepScheduled, events.StepScheduledData{Activity: "echo", Input: json.RawMessage(`[1,2]`),
			ForEach: &events.ForEachData{Count: 2, MaxParallel: 1}}),
		step(t, runID, "each[0]", events.StepScheduled, events.StepScheduledData{Activity: "echo", Input: json.RawMessage(`{"item":1}`)}),
		step(t, runID, "each[0]", events.StepStarted, worker("w-2")),
	)
	v := s.waitRun(t, runID, atSeq(9), "the steps' events applied")
	require.JSONEq(t, `{"order":7}`, string(v.Input))
	require.Equal(t, &events.ForEachProgress{ForEachData: events.ForEachData{Count: 2, MaxParallel: 1}, Running: 1}, v.Steps[2].ForEach)

	detail := func(stepID string) events.StepDetail {
		var d events.StepDetail
		s.fetch(t, readerToken, "/v1/runs/"+runID+"/steps/"+url.PathEscape(stepID)).decode(t, &d)
		return d
	}
	a := detail("a")
	require.JSONEq(t, `{"static":1}`, string(a.Input))
	require.Equal(t, events.InputPlan, a.InputSource)
	require.JSONEq(t, `{"sum":3}`, string(a.Output))
	require.Len(t, a.Attempts, 1)
	require.Equal(t, "w-1", a.Attempts[0].WorkerID)
	require.Equal(t, events.StepStatusSuccess, a.Attempts[0].Status)
	require.NotNil(t, a.Attempts[0].ScheduledAt)
	require.NotNil(t, a.Attempts[0].CompletedAt)

	require.Equal(t, &events.StepSkip{Reason: "CONDITION_FALSE", Condition: "b"}, detail("b").Skip)
	require.JSONEq(t, `[1,2]`, string(detail("each").Input))
	child := detail("each[0]")
	require.JSONEq(t, `{"item":1}`, string(child.Input))
	require.Equal(t, events.StepStatusRunning, child.Attempts[0].Status)
	require.Equal(t, events.StepDetail{StepID: "never", Attempts: []events.StepAttempt{}}, detail("never"))

	requireError(t, s.fetch(t, otherToken, "/v1/runs/"+runID+"/steps/a"), http.StatusNotFound, api.CodeNotFound)
	requireError(t, s.fetch(t, readerToken, "/v1/runs/not-a-run/steps/a"), http.StatusBadRequest, api.CodeInvalidArgument)

	// The run without the forEach step's children, and the children by page.
	var top api.RunView
	s.fetch(t, readerToken, "/v1/runs/"+runID+"?steps=top").decode(t, &top)
	require.Len(t, top.Steps, 3, "a, b and each")
	requireError(t, s.fetch(t, readerToken, "/v1/runs/"+runID+"?steps=some"), http.StatusBadRequest, api.CodeInvalidArgument, "steps")
	var page api.ChildPage
	s.fetch(t, readerToken, "/v1/runs/"+runID+"/steps/each/children?limit=1").decode(t, &page)
	require.Len(t, page.Children, 1)
	require.Equal(t, "each[0]", page.Children[0].StepID)
	require.Equal(t, events.StepStatusRunning, page.Children[0].Status)
	require.Equal(t, 0, page.NextAfterIndex)
	require.False(t, page.More, "each[1] is not scheduled yet")
	s.fetch(t, readerToken, "/v1/runs/"+runID+"/steps/each/children?afterIndex=0").decode(t, &page)
	require.Equal(t, api.ChildPage{Children: []events.StepSnapshot{}, NextAfterIndex: 0}, page)
	requireError(t, s.fetch(t, readerToken, "/v1/runs/"+runID+"/steps/each/children?limit=0"), http.StatusBadRequest, api.CodeInvalidArgument, "limit")
	requireError(t, s.fetch(t, otherToken, "/v1/runs/"+runID+"/steps/each/children"), http.StatusNotFound, api.CodeNotFound)

	var list api.RunList
	s.fetch(t, readerToken, "/v1/runs").decode(t, &list)
	require.Len(t, list.Runs, 1)
	require.Equal(t, 3, list.Runs[0].StepsTotal, "a, b and the forEach step; its children count in it")
	require.Equal(t, 2, list.Runs[0].StepsDone)
}
