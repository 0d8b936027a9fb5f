package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// BenchmarkListByLabel's figures (issue #39: a label-filtered list over
// 100,000 runs has p99 < 50 ms).
const (
	// listRuns is how many runs the list filters over.
	listRuns = 100_000
	// listRequests is how many lists each filter shape measures.
	listRequests = 300
	// listRate is the lists per second each shape sends, one at a time:
	// half the read API's default key rate (100/s), so that no answer is
	// a refusal.
	listRate = 50
)

// listShapes are the filters measured, as GET /v1/runs query strings: a
// common label (5,000 runs of listRuns), two labels ANDed (about 1,667),
// a rare label (100) and a label with a status (about 714).
var listShapes = []struct{ name, query string }{
	{"common", "label=team=team-7"},
	{"two", "label=team=team-7&label=env=prod"},
	{"rare", "label=canary=yes"},
	{"status", "label=team=team-7&status=RUNNING"},
}

// BenchmarkListByLabel is a diagnostic of the read API's label filter on
// a whole `weft dev` stack: GET /v1/runs with label=K=V (repeatable,
// ANDed), over HTTP with the dev key, while every service runs.
//
// Its 100,000 runs are not started through the gateway: at the ~200
// runs/s a two-core host starts (BENCHMARKS.md), seeding them would take
// eight minutes of every `make bench`. Two runs are started
// through the gateway and projected as any run (one of systemPlan,
// COMPLETED; one of parkedPlan, RUNNING), and their run_snapshots rows,
// as the projector wrote them, are copied listRuns times in SQL with a
// new run id, a creation time 100 ms apart and labels of their own:
// team=team-(i%20), env one of prod, staging, dev (i%3), and canary=yes
// on one run in 1,000; one copy in 7 is of the RUNNING run. The copies
// keep their source's snapshot document (the list reads its times and
// counts, never its run id), and have no events in the log: the read API
// lists run_snapshots alone. The table is then ANALYZEd, as autovacuum
// would have analysed it after its growth.
//
// Each shape of listShapes sends listRequests lists (default page, 50
// runs) at listRate/s and reports the answers' p50 and p99 (ms, client
// side, over loopback), and the insert ceiling measured before the
// seeding (ceiling_commits/s), for the host's scale.
func BenchmarkListByLabel(b *testing.B) {
	s := startDevStack(b, nil)
	ceiling := insertCeiling(b, s.db, 3*time.Second)
	s.seedListRuns(b)
	for _, shape := range listShapes {
		b.Run(shape.name, func(b *testing.B) {
			for range b.N {
				lat := s.measureList(b, shape.query)
				b.ReportMetric(float64(lat.percentile(0.50).Microseconds())/1000, "p50_ms")
				b.ReportMetric(float64(lat.percentile(0.99).Microseconds())/1000, "p99_ms")
				b.ReportMetric(listRuns, "runs")
				b.ReportMetric(ceiling, "ceiling_commits/s")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// seedListRunsSQL copies the rows of $1 (COMPLETED) and $2 (RUNNING)
// $3 times, whatever run_snapshots' columns, overriding the run id, the
// creation time and the labels.
const seedListRunsSQL = `/* bench */
INSERT INTO run_snapshots
SELECT (jsonb_populate_record(NULL::run_snapshots, to_jsonb(r) || jsonb_build_object(
	'run_id', gen_random_uuid(),
	'created_at', now() - i * interval '100 milliseconds',
	'labels', jsonb_build_object('team', 'team-' || (i % 20), 'env', (ARRAY['prod', 'staging', 'dev'])[1 + i % 3])
	          || CASE WHEN i % 1000 = 0 THEN '{"canary":"yes"}'::jsonb ELSE '{}'::jsonb END))).*
FROM generate_series(1, $3::int) AS i
JOIN run_snapshots r ON r.run_id = CASE WHEN i % 7 = 0 THEN $2::uuid ELSE $1::uuid END`

// seedListRuns starts and projects the two source runs, then copies
// their rows into listRuns runs (seedListRunsSQL) and analyses the table.
func (s *devStack) seedListRuns(b *testing.B) {
	ctx := context.Background()
	start := time.Now()
	completed, err := s.startRun(ctx, systemPlan, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.waitEnded(ctx, start, 1, time.Minute); err != nil {
		b.Fatal(err)
	}
	running := s.parkRuns(b, parkedPlan, 1)[0]
	tag, err := s.db.Pool.Exec(ctx, seedListRunsSQL, completed, running, listRuns)
	if err != nil {
		b.Fatal(err)
	}
	if tag.RowsAffected() != listRuns {
		b.Fatalf("seeded %d runs, want %d", tag.RowsAffected(), listRuns)
	}
	if _, err := s.db.Pool.Exec(ctx, "/* bench */ ANALYZE run_snapshots"); err != nil {
		b.Fatal(err)
	}
}

// measureList sends listRequests GET /v1/runs?query at listRate/s and
// returns their latencies; it fails b unless each answers 200 with a full
// page of 50 runs.
func (s *devStack) measureList(b *testing.B, query string) *latencies {
	ctx := context.Background()
	var lat latencies
	tick := time.NewTicker(time.Second / listRate)
	defer tick.Stop()
	for range listRequests {
		<-tick.C
		t0 := time.Now()
		n, err := s.listCount(ctx, query)
		lat.add(time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if n != 50 {
			b.Fatalf("GET /v1/runs?%s: %d runs, want a page of 50", query, n)
		}
	}
	return &lat
}

// listCount GETs /v1/runs?query from the read API with the dev key and
// returns how many runs the page holds.
func (s *devStack) listCount(ctx context.Context, query string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.read+"/v1/runs?"+query, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+devToken)
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /v1/runs?%s: %s", query, resp.Status)
	}
	var page api.RunList
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return 0, err
	}
	return len(page.Runs), nil
}
