package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// forEachInputPlan loops step fan over the run input's orders.
const forEachInputPlan = `{"planId":"hello","planVersion":"1","steps":[
	{"id":"fan","activity":"echo","forEach":"input.orders","input":{"o":"${{ item }}"}}]}`

// ordersInput is a run input whose orders list has n elements.
func ordersInput(n int) json.RawMessage {
	return json.RawMessage(`{"orders":[` + strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]}`)
}

// A start whose input gives a forEach list, read straight from the
// input, more than plan.MaxForEachElements elements is refused with the
// step's path, over REST and JSON-RPC, and nothing is written; one of
// exactly the limit starts. A schedule whose input would do the same is
// refused when it is created.
func TestForEachListFromInputIsBoundedAtTheStart(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	before := s.counts(t)
	body := startBody(events.NewRunID())
	body["plan"] = json.RawMessage(forEachInputPlan)
	body["input"] = ordersInput(plan.MaxForEachElements + 1)

	s.requireStartRefused(t, body, "FOR_EACH_TOO_LARGE", `[{"path": "plan.steps[id=fan].forEach", "code": "FOR_EACH_TOO_LARGE", "stepId": "fan",
		"message": "input.orders has 10001 elements in the run's input, more than the limit of 10000 of a forEach list"}]`)

	sched := scheduleBody("nightly", "plan", json.RawMessage(forEachInputPlan), "input", ordersInput(plan.MaxForEachElements+1))
	a := s.post(t, "/v1/schedules", sched)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	problems, _ := json.Marshal(a.errorBody(t).Details["problems"])
	require.Contains(t, string(problems), `"code":"FOR_EACH_TOO_LARGE"`)
	require.Zero(t, s.rows(t, "schedules", ""), "a refused schedule is not stored")
	require.Equal(t, before, s.counts(t), "a refused start writes nothing")

	body["input"] = ordersInput(plan.MaxForEachElements)
	a = s.post(t, "/v1/runs", body)
	require.Equal(t, http.StatusCreated, a.status, "a list of exactly the limit: %s", a.body)
}
