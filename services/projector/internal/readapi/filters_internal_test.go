package readapi

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// On 100,000 analysed snapshots of two tenants, with labels, reruns, plan
// versions, end times and the run request ids of trigger events and
// schedule fires spread over them, the planner, free to scan
// sequentially, serves each of the list's filters, alone, combined and on
// a later page, through an index: never a sequential scan of
// run_snapshots. A filter that keeps few runs is served by its own index
// (the runs it finds then sorted); one that keeps many, spread over time,
// by the list's index, read newest first until the page is full.
func TestRunsListFiltersUseIndexesAtScale(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `
INSERT INTO run_snapshots (run_id, tenant_id, plan_id, plan_version, status, last_event_seq, snapshot, created_at,
                           run_request_id, labels, rerun_of, ended_at)
SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'other' END, 'p' || (i % 7), 'v' || (i % 5),
       CASE WHEN i % 3 = 0 THEN 'RUNNING' ELSE 'COMPLETED' END, 1, '{}', now() - i * interval '1 second',
       CASE i % 4 WHEN 0 THEN 'orders:e' || i WHEN 1 THEN 'nightly:' || to_char((timestamptz '2026-01-01' + i * interval '1 minute')
            AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ELSE 'r' || i END,
       CASE WHEN i % 10 = 0 THEN jsonb_build_object('team', 't' || (i % 50), 'env', CASE WHEN i % 20 = 0 THEN 'prod' ELSE 'dev' END)
            || CASE WHEN i % 5000 = 0 THEN '{"batch":"rare"}' ELSE '{}' END::jsonb END,
       CASE WHEN i % 100 = 0 THEN ('00000000-0000-7000-8000-' || lpad((i % 1000)::text, 12, '0'))::uuid END,
       CASE WHEN i % 3 <> 0 THEN now() - i * interval '1 second' + interval '5 seconds' END
FROM generate_series(1, 100000) AS i;
ANALYZE run_snapshots`)
	require.NoError(t, err)
	now := time.Now()
	hour := timeRange{from: now.Add(-2 * time.Hour), to: now.Add(-time.Hour)}
	// The filters that keep a few runs are served by their own index.
	own := map[string]struct {
		q     listQuery
		index string
	}{
		"rare label":         {listQuery{labels: map[string]string{"batch": "rare"}}, "run_snapshots_labels"},
		"rare label and env": {listQuery{labels: map[string]string{"batch": "rare", "env": "prod"}}, "run_snapshots_labels"},
		"plan version":       {listQuery{plan: "p3", version: "v2"}, "run_snapshots_plan_version"},
		"rerun of":           {listQuery{rerunOf: "00000000-0000-7000-8000-000000000200"}, "run_snapshots_rerun_of"},
		"schedule":           {listQuery{schedule: "nightly"}, "run_snapshots_source"},
		"an ended minute":    {listQuery{ended: timeRange{from: now.Add(-time.Hour - time.Minute), to: now.Add(-time.Hour)}}, "run_snapshots_ended"},
	}
	for name, c := range own {
		for _, after := range []*cursor{nil, {CreatedAt: now.Add(-30 * time.Minute), RunID: uuid.Nil.String()}} {
			c.q.tenant, c.q.limit, c.q.after = "acme", DefaultListLimit, after
			text := explainWith(t, db, c.q, false)
			require.Contains(t, text, c.index, "%s:\n%s", name, text)
			require.NotContains(t, text, "Seq Scan", "%s:\n%s", name, text)
		}
	}
	cases := map[string]listQuery{
		"one label":            {labels: map[string]string{"team": "t20"}},
		"two labels":           {labels: map[string]string{"team": "t20", "env": "prod"}},
		"a common label":       {labels: map[string]string{"env": "dev"}},
		"plan version":         {plan: "p3", version: "v2"},
		"created range":        {created: hour},
		"created after":        {created: timeRange{from: now.Add(-time.Hour)}},
		"created before":       {created: timeRange{to: now.Add(-20 * time.Hour)}},
		"ended range":          {ended: hour},
		"ended after":          {ended: timeRange{from: now.Add(-time.Hour)}},
		"ended before":         {ended: timeRange{to: now.Add(-20 * time.Hour)}},
		"rerun of":             {rerunOf: "00000000-0000-7000-8000-000000000200"},
		"schedule":             {schedule: "nightly"},
		"trigger":              {trigger: "orders"},
		"several statuses":     {statuses: []string{"RUNNING", "FAILED"}},
		"label and status":     {labels: map[string]string{"team": "t20"}, statuses: []string{"COMPLETED"}},
		"schedule and created": {schedule: "nightly", created: hour},
		"version and ended":    {plan: "p3", version: "v2", ended: hour, statuses: []string{"COMPLETED"}},
		"everything": {labels: map[string]string{"env": "prod"}, plan: "p0", version: "v0", created: hour, ended: hour,
			statuses: []string{"COMPLETED"}, project: "shop", env: "dev"},
	}
	for name, q := range cases {
		for _, after := range []*cursor{nil, {CreatedAt: now.Add(-90 * time.Minute), RunID: uuid.Nil.String()}} {
			q.tenant, q.limit, q.after = "acme", DefaultListLimit, after
			text := explainWith(t, db, q, false)
			require.NotContains(t, text, "Seq Scan", "%s:\n%s", name, text)
			require.Contains(t, text, "Index", "%s:\n%s", name, text)
		}
	}
}
