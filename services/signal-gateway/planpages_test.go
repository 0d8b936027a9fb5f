package gateway_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/signal-gateway/internal/page"

	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// pushVersions pushes versions 1 to n of hello, oldest first.
func (s *stack) pushVersions(t *testing.T, from, to int) {
	t.Helper()
	for v := from; v <= to; v++ {
		s.push(t, versionDoc(strconv.Itoa(v)), http.StatusCreated)
	}
}

// planPage reads a page of hello's versions over REST with query q (its
// projectId set to p) and requires 200.
func (s *stack) planPage(t *testing.T, q url.Values) api.Plan {
	t.Helper()
	q.Set("projectId", "p")
	a := s.get(t, "/v1/plans/hello?"+q.Encode(), viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	return decodeAs[api.Plan](t, a.body)
}

// versionsOf is the planVersion of each of p's versions.
func versionsOf(p api.Plan) []string {
	out := make([]string, len(p.Versions))
	for i, v := range p.Versions {
		out[i] = v.PlanVersion
	}
	return out
}

// walkPlan reads every page of hello's versions, limit at a time, through
// read, and returns the versions seen in order and each page's latest.
func walkPlan(t *testing.T, limit int, read func(limit int, cursor string) api.Plan) (seen, latest []string) {
	t.Helper()
	cursor := ""
	for range 100 {
		p := read(limit, cursor)
		require.LessOrEqual(t, len(p.Versions), limit)
		seen = append(seen, versionsOf(p)...)
		latest = append(latest, p.Latest)
		if p.NextCursor == "" {
			return seen, latest
		}
		cursor = p.NextCursor
	}
	t.Fatal("the pages never end")
	return nil, nil
}

// TestPlanGetPages: GET /v1/plans/{planId} pages a plan's versions newest
// first and names, on every page, the version latest resolves to, which
// may be on a later page; bad paging arguments are refused as the lists
// refuse them.
func TestPlanGetPages(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.pushVersions(t, 1, 5)
	read := func(limit int, cursor string) api.Plan {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		return s.planPage(t, q)
	}
	seen, latest := walkPlan(t, 2, read)
	require.Equal(t, []string{"5", "4", "3", "2", "1"}, seen)
	require.Equal(t, []string{"5", "5", "5"}, latest, "each page names latest")

	for _, v := range []string{"5", "4", "3"} {
		a := s.post(t, "/v1/plans/hello/versions/"+v+"/archive?projectId=p", []byte("{}"))
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	}
	first := read(2, "")
	require.Equal(t, []string{"5", "4"}, versionsOf(first))
	require.Equal(t, "2", first.Latest, "latest is beyond the first page")
	second := read(2, first.NextCursor)
	require.Equal(t, []string{"3", "2"}, versionsOf(second))
	require.Equal(t, "2", second.Latest)
	for _, v := range []string{"2", "1"} {
		a := s.post(t, "/v1/plans/hello/versions/"+v+"/archive?projectId=p", []byte("{}"))
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	}
	_, latest = walkPlan(t, 2, read)
	require.Equal(t, []string{"", "", ""}, latest, "no latest when every version is archived")

	var oldest int64
	require.NoError(t, s.db.Pool.QueryRow(context.Background(), `SELECT min(seq) FROM plan_versions`).Scan(&oldest))
	past := read(2, page.Cursor(strconv.FormatInt(oldest, 10)))
	require.Empty(t, past.Versions, "a page past the oldest version is empty")
	require.Equal(t, "hello", past.PlanID)

	for name, tc := range map[string]struct {
		query, field string
		token        string
		status       int
	}{
		"limit zero":          {"limit=0", "limit", viewerToken, http.StatusBadRequest},
		"limit past the max":  {"limit=" + strconv.Itoa(page.MaxLimit+1), "limit", viewerToken, http.StatusBadRequest},
		"limit not a number":  {"limit=ten", "limit", viewerToken, http.StatusBadRequest},
		"cursor not base64":   {"cursor=%21%21", "cursor", viewerToken, http.StatusBadRequest},
		"cursor not a seq":    {"cursor=" + page.Cursor("abc"), "cursor", viewerToken, http.StatusBadRequest},
		"cursor below one":    {"cursor=" + page.Cursor("0"), "cursor", viewerToken, http.StatusBadRequest},
		"unknown parameter":   {"version=1", "version", viewerToken, http.StatusBadRequest},
		"another tenant":      {"cursor=" + first.NextCursor, "", strangerToken, http.StatusNotFound},
		"another project":     {"cursor=" + first.NextCursor, "", viewerToken, http.StatusNotFound},
		"no project, a page":  {"limit=2", "projectId", viewerToken, http.StatusBadRequest},
		"unknown plan, paged": {"cursor=" + first.NextCursor, "", viewerToken, http.StatusNotFound},
	} {
		path := "/v1/plans/hello?projectId=p&" + tc.query
		switch name {
		case "another project":
			path = "/v1/plans/hello?projectId=q&" + tc.query
		case "no project, a page":
			path = "/v1/plans/hello?" + tc.query
		case "unknown plan, paged":
			path = "/v1/plans/nope?projectId=p&" + tc.query
		}
		a := s.get(t, path, tc.token)
		require.Equal(t, tc.status, a.status, "%s: %s", name, a.body)
		e := a.errorBody(t)
		if tc.status == http.StatusNotFound {
			require.Equal(t, api.CodeNotFound, e.Code, name)
			continue
		}
		require.Equal(t, api.CodeInvalidArgument, e.Code, name)
		require.Equal(t, tc.field, e.Details["field"], name)
	}
}

// TestPlanGetMaxLimit: a page holds at most page.MaxLimit versions, with
// no next page when the plan has exactly that many and one more page
// when it has one more; without a limit a page is page.DefaultLimit.
func TestPlanGetMaxLimit(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.pushVersions(t, 1, page.MaxLimit)
	maxPage := url.Values{"limit": {strconv.Itoa(page.MaxLimit)}}
	full := s.planPage(t, maxPage)
	require.Len(t, full.Versions, page.MaxLimit)
	require.Empty(t, full.NextCursor, "exactly a page: no next page")
	require.Equal(t, strconv.Itoa(page.MaxLimit), full.Latest)

	s.pushVersions(t, page.MaxLimit+1, page.MaxLimit+1)
	full = s.planPage(t, maxPage)
	require.Len(t, full.Versions, page.MaxLimit)
	require.Equal(t, strconv.Itoa(page.MaxLimit+1), full.Versions[0].PlanVersion)
	require.NotEmpty(t, full.NextCursor, "one more version: one more page")
	last := s.planPage(t, url.Values{"limit": {strconv.Itoa(page.MaxLimit)}, "cursor": {full.NextCursor}})
	require.Equal(t, []string{"1"}, versionsOf(last))
	require.Empty(t, last.NextCursor)
	require.Equal(t, strconv.Itoa(page.MaxLimit+1), last.Latest)

	def := s.planPage(t, url.Values{})
	require.Len(t, def.Versions, page.DefaultLimit)
	require.NotEmpty(t, def.NextCursor)
}

// TestRPCAndNATSPlanGetPages: plan.get and weft.plans.get page a plan's
// versions as REST does, answer its pages alike, and refuse bad paging
// arguments in their own error shapes; limit or cursor beside a
// planVersion is refused on NATS.
func TestRPCAndNATSPlanGetPages(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.pushVersions(t, 1, 3)
	params := func(limit int, cursor string) map[string]any {
		return map[string]any{"projectId": "p", "planId": "hello", "limit": limit, "cursor": cursor}
	}
	rest := func(limit int, cursor string) api.Plan {
		return s.planPage(t, url.Values{"limit": {strconv.Itoa(limit)}, "cursor": {cursor}})
	}
	rpc := func(limit int, cursor string) api.Plan {
		return rpcResult[api.Plan](t, s, "plan.get", params(limit, cursor))
	}
	natsGet := func(limit int, cursor string) api.Plan {
		status, body, _ := s.request(t, streams.PlanGetSubject, viewerToken, marshal(t, params(limit, cursor)))
		require.Equal(t, http.StatusOK, status, "%s", body)
		return decodeAs[api.Plan](t, body)
	}
	for name, read := range map[string]func(int, string) api.Plan{"JSON-RPC": rpc, "NATS": natsGet} {
		first := read(2, "")
		require.Equal(t, rest(2, ""), first, name)
		require.Equal(t, []string{"3", "2"}, versionsOf(first), name)
		require.Equal(t, rest(2, first.NextCursor), read(2, first.NextCursor), name)
		seen, _ := walkPlan(t, 2, read)
		require.Equal(t, []string{"3", "2", "1"}, seen, name)
	}

	for name, p := range map[string]map[string]any{
		"limit past the max": params(page.MaxLimit+1, ""),
		"negative limit":     params(-1, ""),
		"bad cursor":         params(2, "!!"),
	} {
		r := s.rpcAs(t, viewerToken, "plan.get", p)
		require.NotNil(t, r.Error, name)
		require.Equal(t, -32602, r.Error.Code, name)
		require.Equal(t, api.CodeInvalidArgument, r.Error.Data.Code, name)
		status, body, _ := s.request(t, streams.PlanGetSubject, viewerToken, marshal(t, p))
		require.Equal(t, http.StatusBadRequest, status, "%s: %s", name, body)
		require.Equal(t, api.CodeInvalidArgument, decodeAs[api.ErrorBody](t, body).Error.Code, name)
	}
	status, body, _ := s.request(t, streams.PlanGetSubject, viewerToken,
		[]byte(`{"projectId":"p","planId":"hello","planVersion":"1","limit":2}`))
	require.Equal(t, http.StatusBadRequest, status, "%s", body)
	require.Equal(t, "planVersion", decodeAs[api.ErrorBody](t, body).Error.Details["field"])
}
