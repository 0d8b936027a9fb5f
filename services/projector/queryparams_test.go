package projector_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/projector"
)

// Every read API route refuses a query parameter it does not take, a
// second value of one that takes one, and a query string that does not
// parse, with 400 InvalidArgument naming the parameter and the route's
// parameters; a repeatable one may repeat.
func TestQueryParametersChecked(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.completed(t, "params")
	paths := strings.NewReplacer("{runId}", runID, "{stepId}", "a")

	for route, params := range projector.ReadRoutes() {
		_, tmpl, _ := strings.Cut(route, " ")
		path := paths.Replace(tmpl)
		accepted := []any{}
		var names []string
		for _, p := range params {
			accepted = append(accepted, p.Name)
			names = append(names, p.Name)
		}
		body := requireParamError(t, s.fetch(t, readerToken, path+"?stauts=FAILED"), "stauts", `"stauts"`, route)
		require.Equal(t, accepted, body.Error.Details["accepted"], "%s: details.accepted", route)
		if len(names) > 0 {
			require.Contains(t, body.Error.Message, strings.Join(names, ", "), route)
		} else {
			require.Contains(t, body.Error.Message, "takes none", route)
		}
		requireError(t, s.fetch(t, readerToken, path+"?limit=%zz"), http.StatusBadRequest, api.CodeInvalidArgument, "query string")
		for _, p := range params {
			if p.Repeatable {
				continue
			}
			requireParamError(t, s.fetch(t, readerToken, path+"?"+p.Name+"=1&"+p.Name+"=2"), p.Name, "2 times", route)
		}
		require.Equal(t, http.StatusUnauthorized, s.fetch(t, "", path+"?stauts=FAILED").status, "%s: the key is checked first", route)
	}
	require.Len(t, s.list(t, readerToken, "status=COMPLETED&status=RUNNING").Runs, 1, "status repeats")
}

// requireParamError asserts r is a 400 InvalidArgument whose details.field
// is field and whose message holds each of parts, and returns its body.
func requireParamError(t *testing.T, r reply, field string, parts ...string) api.ErrorBody {
	t.Helper()
	requireError(t, r, http.StatusBadRequest, api.CodeInvalidArgument, parts...)
	var body api.ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &body))
	require.Equal(t, field, body.Error.Details["field"], "body: %s", r.body)
	return body
}

// projectId and environmentId keep exactly the runs of that project and
// environment, with the other filters and across pages; an empty one is
// refused.
func TestRunsListProjectAndEnvironment(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	shopDev := s.approveIn(t, "shop", "dev")
	shopProd := s.approveIn(t, "shop", "prod")
	blogDev := s.approveIn(t, "blog", "dev")
	for _, id := range []string{shopDev, shopProd, blogDev} {
		s.waitRun(t, id, atSeq(1), "approved")
	}
	for query, want := range map[string][]string{
		"projectId=shop":                         {shopProd, shopDev},
		"environmentId=dev":                      {blogDev, shopDev},
		"projectId=shop&environmentId=prod":      {shopProd},
		"projectId=blog&environmentId=prod":      {},
		"projectId=sho":                          {},
		"projectId=shop&status=APPROVED&plan=at": {shopProd, shopDev},
		"projectId=shop&status=RUNNING":          {},
	} {
		require.Equal(t, want, runIDs(s.list(t, readerToken, query).Runs), "GET /v1/runs?%s", query)
	}
	require.Equal(t, []string{shopProd, shopDev}, s.walk(t, "projectId=shop", 1))
	require.Empty(t, s.list(t, otherToken, "projectId=shop").Runs, "another tenant's key sees none of them")
	requireParamErrorMessage(t, s, "projectId=", "projectId")
	requireParamErrorMessage(t, s, "environmentId=", "environmentId")
}

func requireParamErrorMessage(t *testing.T, s *stack, query, name string) {
	t.Helper()
	requireError(t, s.fetch(t, readerToken, "/v1/runs?"+query), http.StatusBadRequest, api.CodeInvalidArgument, name)
}

// approveIn approves a run of plan "at" in tenant acme's project and
// environment, as approve does, and returns its id.
func (s *stack) approveIn(t *testing.T, project, env string) string {
	t.Helper()
	p, err := plan.ParseValidated([]byte(`{"planId":"at","planVersion":"v1","steps":[{"id":"a","activity":"echo"}]}`), plan.Limits{})
	require.NoError(t, err)
	var runID string
	err = pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		runID, err = runstart.Approver{Journal: s.journal}.ApproveTx(t.Context(), tx,
			runstart.Request{Plan: p, TenantID: tenant, ProjectID: project, EnvironmentID: env})
		return err
	})
	require.NoError(t, err)
	return runID
}
