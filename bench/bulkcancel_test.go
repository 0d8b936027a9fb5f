package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// BenchmarkBulkCancel's figures (issue #39: a bulk cancel of 10,000 runs
// completes in under 30 s while a live load keeps at least 80 % of its
// throughput).
const (
	// bulkRuns is how many parked runs the job cancels.
	bulkRuns = 10_000
	// bulkDevRate is the rate weft dev's gateway runs bulk jobs at, its
	// default (bulk.DefaultRate): runs acted on per second.
	bulkDevRate = 500
)

// bulkLabel is the label the parked runs carry and the job's filter
// selects them by.
var bulkLabel = map[string]string{"batch": "bulk-cancel"}

// BenchmarkBulkCancel is the whole `weft dev` stack cancelling bulkRuns
// runs in one bulk job beside a live load. bulkRuns runs of parkedPlan,
// labelled bulkLabel, are parked (parkRuns: each waits for its signal,
// the stack is quiet); a closed load of systemRuns runs of systemPlan
// from systemClients clients is measured alone (alone_runs/s), then the
// job is started (POST /v1/bulk, action CANCEL, filter the label, through
// the gateway's HTTP API) and the same load is started at once
// (during_runs/s; live_kept_% is its share of the first). At bulkDevRate
// the job takes at least 20 s; the load is sized to end within it on a
// two-core host (during_s, from its first start to its last completion,
// says whether it did).
//
// The job's duration (bulk_s) is from the POST to the later of the job's
// end (GET /v1/bulk/{bulkId} DONE, its endedAt) and the last parked run's
// RunCancelled in the log; job_s and cancelled_s are each of the two,
// and cancels/s is bulkRuns over bulk_s. The job must
// match, and do, every parked run. Reported beside them: the gateway's
// bulk rate (bulk_rate/s, weft dev's default) and the insert ceiling
// measured before the parking, as BenchmarkSystem does.
//
// Unlike BenchmarkSystemParked it does not wait out the bus's duplicate
// window (5 minutes) after parking: both loads run inside it, so both
// share the parking burst's cost.
func BenchmarkBulkCancel(b *testing.B) {
	for range b.N {
		s := startDevStack(b, nil)
		ceiling := insertCeiling(b, s.db, 3*time.Second)
		parked := benchPlan{id: parkedPlan.id, doc: parkedPlan.doc, labels: bulkLabel}
		ids := s.parkRuns(b, parked, bulkRuns)
		s.checkpoint(b)
		alone := s.closedLoop(b, systemPlan, systemRuns, systemClients).rate(b, s)
		if err := s.waitQuiet(context.Background(), 5*time.Minute); err != nil {
			b.Fatal(err)
		}
		s.checkpoint(b)
		start := time.Now()
		bulkID := s.startBulkCancel(b)
		load := s.closedStarts(b, systemPlan, systemRuns, systemClients)
		job := s.waitBulkDone(b, bulkID, 5*time.Minute)
		lastCancel := s.waitEvents(b, ids, "RunCancelled", 5*time.Minute)
		s.waitEvents(b, load.runIDs, "RunCompleted", 5*time.Minute)
		during := load.rate(b, s)
		jobTook, cancelTook := job.EndedAt.Sub(start), lastCancel.Sub(start)
		took := max(jobTook, cancelTook)
		b.ReportMetric(took.Seconds(), "bulk_s")
		b.ReportMetric(jobTook.Seconds(), "job_s")
		b.ReportMetric(cancelTook.Seconds(), "cancelled_s")
		b.ReportMetric(float64(bulkRuns)/took.Seconds(), "cancels/s")
		b.ReportMetric(bulkDevRate, "bulk_rate/s")
		b.ReportMetric(alone, "alone_runs/s")
		b.ReportMetric(during, "during_runs/s")
		b.ReportMetric(100*during/alone, "live_kept_%")
		b.ReportMetric(float64(len(load.runIDs))/during, "during_s")
		b.ReportMetric(ceiling, "ceiling_commits/s")
		b.ReportMetric(100*alone/ceiling, "ceiling_%")
		b.ReportMetric(0, "ns/op")
	}
}

// startBulkCancel POSTs the CANCEL job of bulkLabel's runs to the
// gateway and returns its bulkId; it fails b unless the job is new (202).
func (s *devStack) startBulkCancel(b *testing.B) string {
	id := fmt.Sprintf("bench-cancel-%d", time.Now().UnixNano())
	body, err := json.Marshal(api.BulkRequest{BulkID: id, Action: api.BulkCancel, Filter: api.BulkFilter{Labels: bulkLabel}})
	if err != nil {
		b.Fatal(err)
	}
	var job api.BulkJob
	if status := s.gatewayDo(b, http.MethodPost, "/v1/bulk", body, &job); status != http.StatusAccepted {
		b.Fatalf("POST /v1/bulk: %d, want 202", status)
	}
	return id
}

// waitBulkDone polls GET /v1/bulk/{id} until the job is DONE and returns
// it; it fails b unless it matched and did every parked run, or if bound
// passes first.
func (s *devStack) waitBulkDone(b *testing.B, id string, bound time.Duration) api.BulkJob {
	deadline := time.Now().Add(bound)
	for {
		var job api.BulkJob
		if status := s.gatewayDo(b, http.MethodGet, "/v1/bulk/"+id, nil, &job); status != http.StatusOK {
			b.Fatalf("GET /v1/bulk/%s: %d", id, status)
		}
		if job.Status == api.BulkDone {
			if job.Matched != bulkRuns || job.Done != bulkRuns || job.EndedAt == nil {
				b.Fatalf("bulk job done: matched %d, done %d, skipped %d %v, failed %d; want %d done",
					job.Matched, job.Done, job.Skipped, job.SkippedReasons, job.Failed, bulkRuns)
			}
			return job
		}
		if job.Status != api.BulkRunning || time.Now().After(deadline) {
			b.Fatalf("bulk job %s after %v: %d of %d done", job.Status, bound, job.Done, job.Matched)
		}
		// The job's clock is its endedAt, not this loop's.
		time.Sleep(250 * time.Millisecond)
	}
}

// waitEvents waits until every run of ids has an event of type in the
// log and returns the last one's persistedAt; it fails b if bound passes
// first. Unlike waitEnded it counts these runs alone: the job's
// cancellations and the live load's completions end runs side by side.
func (s *devStack) waitEvents(b *testing.B, ids []string, eventType string, bound time.Duration) time.Time {
	ctx := context.Background()
	deadline := time.Now().Add(bound)
	for {
		var n int
		var last *time.Time
		err := s.db.Pool.QueryRow(ctx, `/* bench */ SELECT count(*), max(persisted_at) FROM run_events
			WHERE run_id = ANY($1::uuid[]) AND event_type = $2`, ids, eventType).Scan(&n, &last)
		if err != nil {
			b.Fatal(err)
		}
		if n == len(ids) {
			return *last
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d runs have their %s after %v", n, len(ids), eventType, bound)
		}
		// The figures' clocks are read from the log, not from this loop.
		time.Sleep(250 * time.Millisecond)
	}
}

// gatewayDo sends body (nil for none) to the gateway's path with the dev
// key, decodes a 2xx answer into out and returns the status.
func (s *devStack) gatewayDo(b *testing.B, method, path string, body []byte, out any) int {
	req, err := http.NewRequestWithContext(context.Background(), method, s.gateway+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+devToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 == 2 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			b.Fatal(err)
		}
	}
	return resp.StatusCode
}
