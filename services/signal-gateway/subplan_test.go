package gateway_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// nestedPlanDoc is a plan whose inline subPlan plans nest depth levels of
// child runs.
func nestedPlanDoc(depth int) string {
	doc := `{"planId":"leaf","planVersion":"1","steps":[{"id":"work","activity":"echo"}]}`
	for range depth {
		doc = `{"planId":"level","planVersion":"1","steps":[{"id":"down","kind":"subPlan","plan":` + doc + `}]}`
	}
	return doc
}

// A start whose inline plans nest deeper than plan.DefaultMaxRunDepth is
// refused on every transport at the path of the plan too deep, and
// nothing is written; at the limit it starts. A subPlan step's bad field
// is refused at its path too.
func TestStartRefusesChildRunsTooDeep(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	start := func(id, doc string) string {
		return `{"tenantId":"acme","projectId":"p","environmentId":"dev","planId":"level","planVersion":"1",` +
			`"runRequestId":"` + id + `","plan":` + doc + `}`
	}
	wantStatus := map[string]int{"REST": http.StatusBadRequest, "JSON-RPC": jsonrpc.CodeInvalidParams, "NATS": http.StatusBadRequest}
	for _, r := range startRefusals(t, s, start("deep", nestedPlanDoc(plan.DefaultMaxRunDepth+1))) {
		require.Equal(t, wantStatus[r.transport], r.status, r.transport)
		ps := problemsOf(t, r.err)
		require.Len(t, ps, 1, "%s: %+v", r.transport, ps)
		require.Equal(t, plan.CodeRunTooDeep, ps[0].Code, r.transport)
		require.Contains(t, ps[0].Message, fmt.Sprintf("more than the limit of %d", plan.DefaultMaxRunDepth), r.transport)
	}
	bad := `{"planId":"level","planVersion":"1","steps":[{"id":"pay","kind":"subPlan","planRef":{"planId":"charge"},"queue":"q"}]}`
	for _, r := range startRefusals(t, s, start("bad", bad)) {
		paths := []string{}
		for _, p := range problemsOf(t, r.err) {
			paths = append(paths, p.Path)
		}
		require.ElementsMatch(t, []string{"plan.steps[id=pay].planRef.planVersion", "plan.steps[id=pay].queue"}, paths, r.transport)
	}
	require.Zero(t, s.counts(t), "a refused start writes nothing")

	a := s.post(t, "/v1/runs", []byte(start("at-limit", nestedPlanDoc(plan.DefaultMaxRunDepth))))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
}
