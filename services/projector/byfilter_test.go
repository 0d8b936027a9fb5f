package projector_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/projector"
)

// filtered is a run to approve for the filter tests.
type filtered struct {
	planID, version, requestID string
	labels                     map[string]string
	rerunOf                    string
}

// approveFiltered approves f in tenant acme, with a one-step plan of its
// planId and version, and returns its run id once it is projected.
func (s *stack) approveFiltered(t *testing.T, f filtered) string {
	t.Helper()
	p, err := plan.ParseValidated([]byte(`{"planId":"`+f.planID+`","planVersion":"`+f.version+
		`","steps":[{"id":"a","activity":"echo"}]}`), plan.Limits{})
	require.NoError(t, err)
	req := runstart.Request{Plan: p, TenantID: tenant, ProjectID: "proj", EnvironmentID: "dev",
		RunRequestID: f.requestID, Labels: f.labels}
	if f.rerunOf != "" {
		req.RerunOf = &events.RerunOf{RunID: f.rerunOf, FromStepID: "a"}
	}
	var runID string
	err = pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		runID, err = runstart.Approver{Journal: s.journal}.ApproveTx(t.Context(), tx, req)
		return err
	})
	require.NoError(t, err)
	s.waitRun(t, runID, atSeq(1), "approved")
	return runID
}

// filterMix is six runs of tenant acme, oldest first, and the creation
// and end times the filters are tested with.
type filterMix struct {
	a, b, c, d, e, f string
	created          map[string]time.Time
	ended            map[string]time.Time
}

// newFilterMix approves, in order: a (plan p v1, team=data env=prod, a
// fire of schedule nightly), b (p v2, team=data env=dev, an event of
// trigger orders), c (p v1, team=web, a rerun of a), d (q v1, no labels,
// another fire of nightly), e (p v1, team=data env=prod, a fire of
// schedule nightly-eu) and f (p v1, team=data, a rerun of a, an event
// "evt" of a trigger named nightly, which is no fire); then ends a, c
// and e, in that order.
func newFilterMix(t *testing.T, s *stack) filterMix {
	t.Helper()
	var m filterMix
	m.a = s.approveFiltered(t, filtered{"p", "v1", "nightly:2026-03-02T09:00:00Z", map[string]string{"team": "data", "env": "prod"}, ""})
	m.b = s.approveFiltered(t, filtered{"p", "v2", "orders:e1", map[string]string{"team": "data", "env": "dev"}, ""})
	m.c = s.approveFiltered(t, filtered{"p", "v1", "plain-c", map[string]string{"team": "web"}, m.a})
	m.d = s.approveFiltered(t, filtered{"q", "v1", "nightly:2026-03-03T09:00:00Z", nil, ""})
	m.e = s.approveFiltered(t, filtered{"p", "v1", "nightly-eu:2026-03-02T09:00:00Z", map[string]string{"team": "data", "env": "prod"}, ""})
	m.f = s.approveFiltered(t, filtered{"p", "v1", "nightly:evt", map[string]string{"team": "data"}, m.a})
	for _, id := range []string{m.a, m.c, m.e} {
		s.appendBus(t, lifecycle(t, id)...)
		s.waitRun(t, id, atSeq(6), "completes")
	}
	m.created, m.ended = map[string]time.Time{}, map[string]time.Time{}
	for _, r := range s.list(t, readerToken, "").Runs {
		m.created[r.RunID] = r.CreatedAt
		if r.CompletedAt != nil {
			m.ended[r.RunID] = *r.CompletedAt
		}
	}
	require.Len(t, m.created, 6)
	require.Len(t, m.ended, 3)
	return m
}

// at is t as a query value.
func at(t time.Time) string { return url.QueryEscape(t.Format(time.RFC3339Nano)) }

// GET /v1/runs filters by label (repeatable, ANDed), plan version,
// created and ended ranges, rerunOf, schedule, trigger and several
// statuses, each returning exactly its runs newest first, combined with
// each other and in pages; each summary carries the run's labels and
// rerun source.
func TestRunsListByLabelTimeAndSource(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	m := newFilterMix(t, s)
	for query, want := range map[string][]string{
		"label=team=data":                               {m.f, m.e, m.b, m.a},
		"label=team=data&label=env=prod":                {m.e, m.a},
		"label=env=prod&label=team=data&label=env=prod": {m.e, m.a},
		"label=team=web":                                {m.c},
		"label=team=":                                   {},
		"label=team=data&status=COMPLETED":              {m.e, m.a},
		"plan=p&planVersion=v1":                         {m.f, m.e, m.c, m.a},
		"plan=p&planVersion=v2":                         {m.b},
		"plan=q&planVersion=v2":                         {},
		"rerunOf=" + m.a:                                {m.f, m.c},
		"rerunOf=" + m.c:                                {},
		"schedule=nightly":                              {m.d, m.a},
		"schedule=nightly-eu":                           {m.e},
		"trigger=orders":                                {m.b},
		"status=COMPLETED":                              {m.e, m.c, m.a},
		"status=COMPLETED,APPROVED&plan=q":              {m.d},
		"status=COMPLETED&status=APPROVED":              {m.f, m.e, m.d, m.c, m.b, m.a},
		"createdAfter=" + at(m.created[m.c]):            {m.f, m.e, m.d, m.c},
		"createdBefore=" + at(m.created[m.c]):           {m.b, m.a},
		"createdAfter=" + at(m.created[m.b]) + "&createdBefore=" + at(m.created[m.e]): {m.d, m.c, m.b},
		"endedAfter=" + at(m.ended[m.c]):                                              {m.e, m.c},
		"endedBefore=" + at(m.ended[m.c]):                                             {m.a},
		"endedAfter=" + at(m.ended[m.a]) + "&endedBefore=" + at(m.ended[m.e]):         {m.c, m.a},
		"label=team=data&plan=p&planVersion=v1&rerunOf=" + m.a:                        {m.f},
		"schedule=nightly&label=env=prod&endedBefore=" + at(m.ended[m.e]):             {m.a},
		"label=team=data&createdAfter=" + at(m.created[m.b]) + "&status=APPROVED":     {m.f, m.b},
	} {
		got := runIDs(s.list(t, readerToken, query).Runs)
		require.Equal(t, want, append([]string{}, got...), query)
		require.Equal(t, want, append([]string{}, s.walk(t, query, 1)...), "%s: pages of one", query)
	}

	byID := map[string]api.RunSummary{}
	for _, r := range s.list(t, readerToken, "").Runs {
		byID[r.RunID] = r
	}
	require.Equal(t, map[string]string{"team": "data", "env": "prod"}, byID[m.a].Labels)
	require.Nil(t, byID[m.d].Labels)
	require.Equal(t, m.a, byID[m.c].RerunOf)
	require.Empty(t, byID[m.a].RerunOf)
	v, _ := s.run(t, m.a)
	require.Equal(t, map[string]string{"team": "data", "env": "prod"}, v.Labels, "the run's view carries its labels")
}

// A bad value of a filter is a 400 in the read API's shape, naming the
// filter.
func TestRunsListFilterRefusals(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	for query, field := range map[string]string{
		"label=Team=data":                "label",
		"label=team":                     "label",
		"label==x":                       "label",
		"label=team=a&label=team=b":      "label",
		"label=team=a%0Ab":               "label",
		"planVersion=v1":                 "planVersion",
		"plan=p&planVersion=":            "planVersion",
		"createdAfter=yesterday":         "createdAfter",
		"createdBefore=2026-01-02":       "createdBefore",
		"endedAfter=2026-01-02T00:00:00": "endedAfter",
		"endedBefore=now":                "endedBefore",
		"createdAfter=2026-01-02T00:00:00Z&createdBefore=2026-01-01T00:00:00Z": "createdAfter",
		"endedAfter=2026-01-02T00:00:00Z&endedBefore=2026-01-02T00:00:00Z":     "endedAfter",
		"rerunOf=nope":                         "rerunOf",
		"rerunOf=":                             "rerunOf",
		"schedule=":                            "schedule",
		"schedule=a:b":                         "schedule",
		"schedule=a&schedule=b":                "schedule",
		"planVersion=v1&planVersion=v2&plan=p": "planVersion",
	} {
		requireError(t, s.fetch(t, readerToken, "/v1/runs?"+query), http.StatusBadRequest, api.CodeInvalidArgument, field)
	}
}

// Rows a build older than migration 0021 saved have no end time, labels
// or rerun source: the filters cannot find them until the rebuild pass
// records them from the stored snapshots of the ended runs.
func TestRebuildRecordsFilterColumns(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	m := newFilterMix(t, s)
	_, err := s.db.Pool.Exec(t.Context(), `UPDATE run_snapshots SET ended_at = NULL, labels = NULL, rerun_of = NULL`)
	require.NoError(t, err)
	require.Empty(t, s.list(t, readerToken, "label=env=prod").Runs)

	r, err := projector.NewRebuilder(s.db.Pool, projector.Config{})
	require.NoError(t, err)
	_, err = r.Rebuild(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{m.e, m.a}, runIDs(s.list(t, readerToken, "label=env=prod").Runs))
	require.Equal(t, []string{m.c}, runIDs(s.list(t, readerToken, "rerunOf="+m.a).Runs), "c has ended; f waits for its next event")
	require.Equal(t, []string{m.e, m.c}, runIDs(s.list(t, readerToken, "endedAfter="+at(m.ended[m.c])).Runs))

	s.appendBus(t, lifecycle(t, m.f)...)
	s.waitRun(t, m.f, atSeq(6), "completes")
	require.Equal(t, []string{m.f, m.c}, runIDs(s.list(t, readerToken, "rerunOf="+m.a).Runs), "f's next save records it")
}

// GET /v1/runs?queuedKey=KEY keeps the QUEUED runs the concurrency key
// KEY holds (their snapshot's queued.key), newest first, with any other
// filter; a run queued by its environment's limit has none, and a run
// that started leaves the filter. An empty key is a 400.
func TestRunsListByQueuedKey(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	queue := func(key string) string {
		id := s.approve(t, "keyed")
		s.appendBus(t, step(t, id, "", events.RunQueued, events.RunQueuedData{Key: key, Running: 1, Limit: 1,
			Reason: events.RunQueuedKeyReason(key, 1, 1, 0)}))
		s.waitRun(t, id, atSeq(2), "queued")
		return id
	}
	a := queue(`input.customerId = "a"`)
	env := queue("")
	b := queue(`input.customerId = "b"`)
	a2 := queue(`input.customerId = "a"`)
	v, _ := s.run(t, a)
	require.Equal(t, `input.customerId = "a"`, v.Queued.Key)

	byKey := func(query string) []string { return runIDs(s.list(t, readerToken, query).Runs) }
	require.Equal(t, []string{a2, a}, byKey("queuedKey="+url.QueryEscape(`input.customerId = "a"`)))
	require.Equal(t, []string{b}, byKey("queuedKey="+url.QueryEscape(`input.customerId = "b"`)+"&plan=keyed"))
	require.Empty(t, byKey("queuedKey="+url.QueryEscape(`input.customerId = "b"`)+"&plan=other"))
	require.Len(t, byKey("status=QUEUED"), 4, "env's run is QUEUED too: %s", env)

	s.appendBus(t, step(t, a, "", events.RunStarted, nil))
	s.waitRun(t, a, atSeq(3), "started")
	require.Equal(t, []string{a2}, byKey("queuedKey="+url.QueryEscape(`input.customerId = "a"`)), "a started")
	requireError(t, s.fetch(t, readerToken, "/v1/runs?queuedKey="), http.StatusBadRequest, api.CodeInvalidArgument, "queuedKey")
}
