package ui_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// The fixtures: runs and events shaped as docs/read-api.md describes them.

// xss is markup that must show up as text wherever the API's strings go.
const xss = `<img src=x onerror=alert(1)>`

func ptr[T any](v T) *T { return &v }

// runID returns a UUIDv7-looking run id, distinct for each n.
func runID(n int) string {
	return fmt.Sprintf("0193%04x-7c41-7a8e-9d1f-3b2c5e8f%04x", n, n)
}

// simpleRun is a run of the two-step plan hello@v1 in the given status.
func simpleRun(id string, status events.RunStatus, now time.Time) api.RunView {
	var v api.RunView
	v.RunID, v.Status = id, status
	v.TenantID, v.ProjectID, v.EnvironmentID = "default", "demo", "dev"
	v.PlanID, v.PlanVersion = "hello", "v1"
	v.CreatedAt, v.UpdatedAt = now.Add(-5*time.Minute), now
	v.LagMs = 12
	v.Plan.Steps = []api.PlanStep{
		{ID: "greet", Activity: "echo", DependsOn: []string{}},
		{ID: "shout", Activity: "upper", DependsOn: []string{"greet"}},
	}
	v.Artifacts = []events.ArtifactRef{}
	v.Steps = []events.StepSnapshot{}
	if status == events.RunStatusPending || status == events.RunStatusApproved {
		v.LastEventSeq = 1
		return v
	}
	v.StartedAt = ptr(now.Add(-4 * time.Minute))
	v.LastEventSeq = 4
	v.Steps = append(v.Steps, events.StepSnapshot{
		StepID: "greet", Status: events.StepStatusSuccess, LogicalAttemptID: "1", EngineAttemptID: "1",
		StartedAt: ptr(now.Add(-4 * time.Minute)), CompletedAt: ptr(now.Add(-3 * time.Minute)),
		Artifacts: []events.ArtifactRef{}, Attempts: 1,
	})
	switch status {
	case events.RunStatusCompleted:
		v.LastEventSeq = 7
		v.Steps = append(v.Steps, events.StepSnapshot{
			StepID: "shout", Status: events.StepStatusSuccess, LogicalAttemptID: "1", EngineAttemptID: "1",
			StartedAt: ptr(now.Add(-3 * time.Minute)), CompletedAt: ptr(now.Add(-2 * time.Minute)),
			Artifacts: []events.ArtifactRef{}, Attempts: 1,
		})
		v.CompletedAt = ptr(now.Add(-2 * time.Minute))
		v.TotalDurationMs = ptr(int64(120_000))
	case events.RunStatusFailed:
		v.LastEventSeq = 7
		stepErr := &events.StepError{Code: "UPPER_FAILED", Message: "the shouting service said no", Retryable: true, Category: "USER"}
		v.Steps = append(v.Steps, events.StepSnapshot{
			StepID: "shout", Status: events.StepStatusFailed, LogicalAttemptID: "1", EngineAttemptID: "1",
			StartedAt: ptr(now.Add(-3 * time.Minute)), CompletedAt: ptr(now.Add(-2 * time.Minute)),
			Artifacts: []events.ArtifactRef{}, Error: stepErr, Attempts: 1,
		})
		v.FailedSteps = 1
		v.Error = stepErr
		v.CompletedAt = ptr(now.Add(-2 * time.Minute))
		v.TotalDurationMs = ptr(int64(120_000))
	case events.RunStatusCancelled:
		v.CompletedAt = ptr(now.Add(-2 * time.Minute))
		v.TotalDurationMs = ptr(int64(120_000))
	default: // RUNNING, PAUSED
		v.Steps = append(v.Steps, events.StepSnapshot{
			StepID: "shout", Status: events.StepStatusRunning, LogicalAttemptID: "1", EngineAttemptID: "1",
			StartedAt: ptr(now.Add(-3 * time.Minute)), Artifacts: []events.ArtifactRef{}, Attempts: 1,
		})
	}
	return v
}

// stale marks v stale with a gap after afterSeq.
func stale(v api.RunView, afterSeq, seenSeq int64, now time.Time) api.RunView {
	v.Stale = true
	v.Gap = &api.RunGap{AfterSeq: afterSeq, SeenSeq: seenSeq, Since: now.Add(-90 * time.Second)}
	v.LastEventSeq = afterSeq
	return v
}

// richRun is the run of a seven-step ingest plan in mixed states: done,
// retried, failed with a redelivery, running, waiting for a signal, and not
// started; with artifacts and its events.
func richRun(now time.Time) (api.RunView, []events.Event) {
	var v api.RunView
	v.RunID, v.Status = "0193a1f4-7c41-7a8e-9d1f-3b2c5e8f4a10", events.RunStatusRunning
	v.TenantID, v.ProjectID, v.EnvironmentID = "acme", "analytics", "prod"
	v.PlanID, v.PlanVersion = "nightly-ingest", "v14"
	v.CreatedAt, v.UpdatedAt = now.Add(-6*time.Minute-12*time.Second), now.Add(-2*time.Second)
	v.StartedAt = ptr(now.Add(-6*time.Minute - 11*time.Second))
	v.LagMs = 38
	v.Plan.Steps = []api.PlanStep{
		{ID: "extract", Activity: "http.fetch", DependsOn: []string{}},
		{ID: "validate", Activity: "schema.check", DependsOn: []string{"extract"}},
		{ID: "transform", Activity: "dbt.run", DependsOn: []string{"validate"}},
		{ID: "enrich", Activity: "geo.lookup", DependsOn: []string{"validate"}},
		{ID: "approve", Kind: "waitSignal", Signal: "approve", DependsOn: []string{"validate"}},
		{ID: "publish", Activity: "warehouse.load", DependsOn: []string{"transform", "enrich", "approve"}},
		{ID: "notify", Activity: "slack.post", DependsOn: []string{"publish"}},
	}
	raw := events.ArtifactRef{URI: "https://artifacts.example.com/acme/nightly/raw-2026-11-23.json", Kind: "raw-json", SHA256: "9f2c4e1ab7d3", SizeBytes: 2_413_771}
	report := events.ArtifactRef{URI: "https://artifacts.example.com/acme/nightly/validation.html", Kind: "report", SizeBytes: 18_204}
	manifest := events.ArtifactRef{URI: "s3://acme-dbt/nightly/manifest.json", Kind: "dbt-manifest", SizeBytes: 734_003}
	failure := &events.StepError{Code: "DBT_COMPILE_ERROR", Message: "model orders: column \"amount_usd\" not found in source raw.orders", Category: "USER"}
	v.Steps = []events.StepSnapshot{
		{StepID: "extract", Status: events.StepStatusSuccess, LogicalAttemptID: "1", EngineAttemptID: "1",
			StartedAt: ptr(now.Add(-6 * time.Minute)), CompletedAt: ptr(now.Add(-5*time.Minute - 18*time.Second)),
			Artifacts: []events.ArtifactRef{raw}, Attempts: 1},
		{StepID: "validate", Status: events.StepStatusSuccess, LogicalAttemptID: "2", EngineAttemptID: "1",
			StartedAt: ptr(now.Add(-4*time.Minute - 40*time.Second)), CompletedAt: ptr(now.Add(-4*time.Minute - 27*time.Second)),
			Artifacts: []events.ArtifactRef{report}, Attempts: 2},
		{StepID: "transform", Status: events.StepStatusFailed, LogicalAttemptID: "3", EngineAttemptID: "2",
			StartedAt: ptr(now.Add(-2*time.Minute - 5*time.Second)), CompletedAt: ptr(now.Add(-1*time.Minute - 2*time.Second)),
			Artifacts: []events.ArtifactRef{manifest}, Error: failure, Attempts: 5},
		{StepID: "enrich", Status: events.StepStatusRunning, LogicalAttemptID: "1", EngineAttemptID: "3",
			StartedAt: ptr(now.Add(-4*time.Minute - 20*time.Second)), Artifacts: []events.ArtifactRef{}, Attempts: 3},
		{StepID: "approve", Status: events.StepStatusRunning, LogicalAttemptID: "1", EngineAttemptID: "1",
			StartedAt: ptr(now.Add(-4*time.Minute - 26*time.Second)), Artifacts: []events.ArtifactRef{}, Attempts: 1},
	}
	v.Artifacts = []events.ArtifactRef{raw, report, manifest}
	v.FailedSteps = 1

	type e struct {
		typ     events.Type
		step    string
		logical string
		engine  string
		ago     time.Duration
		data    any
	}
	script := []e{
		{events.RunApproved, "", "", "", 372 * time.Second, map[string]any{"tenantId": "acme", "projectId": "analytics", "environmentId": "prod", "planId": "nightly-ingest", "planVersion": "v14", "runRequestId": "nightly-2026-11-23"}},
		{events.RunStarted, "", "", "", 371 * time.Second, nil},
		{events.StepScheduled, "extract", "1", "", 361 * time.Second, map[string]any{"queue": "default"}},
		{events.StepStarted, "extract", "1", "1", 360 * time.Second, nil},
		{events.StepCompleted, "extract", "1", "1", 318 * time.Second, map[string]any{"artifacts": []events.ArtifactRef{raw}}},
		{events.StepStarted, "validate", "1", "1", 300 * time.Second, nil},
		{events.StepFailed, "validate", "1", "1", 290 * time.Second, map[string]any{"error": map[string]any{"code": "TIMEOUT", "message": "schema registry timed out", "retryable": true}}},
		{events.StepRetryScheduled, "validate", "1", "", 290 * time.Second, map[string]any{"nextLogicalAttemptId": "2", "backoff": "10s"}},
		{events.StepStarted, "validate", "2", "1", 280 * time.Second, nil},
		{events.StepCompleted, "validate", "2", "1", 267 * time.Second, map[string]any{"artifacts": []events.ArtifactRef{report}}},
		{events.StepStarted, "approve", "1", "1", 266 * time.Second, map[string]any{"signal": "approve"}},
		{events.StepStarted, "enrich", "1", "1", 260 * time.Second, nil},
		{events.StepStarted, "enrich", "1", "3", 200 * time.Second, nil},
		{events.StepStarted, "transform", "3", "2", 125 * time.Second, nil},
		{events.StepFailed, "transform", "3", "2", 62 * time.Second, map[string]any{"error": failure}},
	}
	evs := make([]events.Event, len(script))
	for i, s := range script {
		var data json.RawMessage
		if s.data != nil {
			data, _ = json.Marshal(s.data)
		}
		at := now.Add(-s.ago)
		evs[i] = events.Event{
			SchemaVersion: events.SchemaVersion, RunID: v.RunID, RunSeq: int64(i + 1),
			EventID: fmt.Sprintf("0193a1f4-7c41-7a8e-9d1f-%012x", i+1), StepID: s.step,
			LogicalAttemptID: s.logical, EngineAttemptID: s.engine, EventType: s.typ, EventData: data,
			IdempotencyKey: fmt.Sprintf("%s:%s:%s:%s:v14", v.RunID, s.step, s.logical, s.typ),
			EmittedAt:      at, PersistedAt: at.Add(3 * time.Millisecond),
		}
	}
	v.LastEventSeq = int64(len(evs))
	return v, evs
}

// listFixture is a mix of runs for the list, newest first, plus the rich run.
func listFixture(now time.Time) []api.RunView {
	rich, _ := richRun(now)
	rich.CreatedAt = now.Add(-40 * time.Second)
	runs := []api.RunView{rich}
	statuses := []events.RunStatus{
		events.RunStatusRunning, events.RunStatusCompleted, events.RunStatusFailed, events.RunStatusPaused,
		events.RunStatusApproved, events.RunStatusCompleted, events.RunStatusCancelled, events.RunStatusPending,
		events.RunStatusCompleted, events.RunStatusCompleted,
	}
	plans := []string{"hello", "nightly-ingest", "billing-sync", "hello", "report", "billing-sync", "hello", "report", "nightly-ingest", "hello"}
	for i, st := range statuses {
		v := simpleRun(runID(i+1), st, now.Add(-time.Duration(i*i+1)*3*time.Minute))
		v.PlanID = plans[i]
		if i == 3 {
			v = stale(v, 3, 5, now)
		}
		runs = append(runs, v)
	}
	return runs
}

// schedule is an active schedule of plan hello@v1, every day at 09:00 UTC,
// with the default policies, that has never fired.
func schedule(id string, now time.Time) api.Schedule {
	return api.Schedule{
		ScheduleID: id, TenantID: "default", ProjectID: "demo", EnvironmentID: "dev",
		Cron: "0 9 * * *", Timezone: "UTC", PlanID: "hello", PlanVersion: "v1",
		MisfirePolicy: api.MisfireSkip, MaxCatchup: api.DefaultMaxCatchup, OverlapPolicy: api.OverlapSkip,
		NextFireAt:  ptr(now.Add(3 * time.Hour)),
		RecentSkips: []api.SkippedFires{},
		CreatedAt:   now.Add(-48 * time.Hour), UpdatedAt: now.Add(-48 * time.Hour),
	}
}

// refusal is the message of the refused skip in scheduleFixture.
const refusal = "environment prod is at its limit of 20 concurrent runs " + xss

// scheduleFixture is one schedule of each kind the list shows, in
// scheduleId order: active, buffered, with no fire time left, never fired,
// paused, and skipped-heavy. Times are whole seconds in UTC, so they encode
// as the API writes them, and half a unit off a round value, so the
// relative times the test expects ("in 50m") hold for 30 s.
func scheduleFixture(now time.Time) []api.Schedule {
	now = now.UTC().Truncate(time.Second)

	active := schedule("billing-daily", now)
	active.Cron, active.Timezone = "0 9 * * 1-5", "Europe/Paris"
	active.PlanID, active.PlanVersion = "billing-sync", "v3"
	active.NextFireAt = ptr(now.Add(2*time.Hour + 30*time.Minute))
	active.LastFireAt, active.LastRunID = ptr(now.Add(-21*time.Hour-30*time.Minute)), runID(101)

	buffered := schedule("hourly-export", now)
	buffered.Cron, buffered.OverlapPolicy = "0 * * * *", api.OverlapBufferOne
	buffered.NextFireAt = ptr(now.Add(50*time.Minute + 30*time.Second))
	buffered.LastFireAt, buffered.LastRunID = ptr(now.Add(-90*time.Minute)), runID(102)
	buffered.BufferedFireAt = ptr(now.Add(-10 * time.Minute))

	fresh := schedule("new-report", now)
	fresh.PlanID, fresh.PlanVersion = "report", "v1"
	fresh.MisfirePolicy, fresh.OverlapPolicy = api.MisfireCompress, api.OverlapAllow
	fresh.NextFireAt = ptr(now.Add(45*time.Minute + 30*time.Second))

	paused := schedule("nightly-ingest", now)
	paused.Cron, paused.Paused = "30 2 * * *", true
	paused.PlanID, paused.PlanVersion = "nightly-ingest", "v14"
	paused.MisfirePolicy, paused.MaxCatchup = api.MisfireCatchup, 5
	paused.OverlapPolicy = api.OverlapCancelPrevious
	paused.NextFireAt = ptr(now.Add(-3*time.Hour - 5*time.Minute))
	paused.LastFireAt, paused.LastRunID = ptr(now.Add(-27*time.Hour-5*time.Minute)), runID(103)

	heavy := schedule("partner-sync", now)
	heavy.Cron, heavy.Timezone = "*/5 * * * *", "America/New_York"
	heavy.MisfirePolicy, heavy.MaxCatchup = api.MisfireCatchup, 3
	heavy.NextFireAt = ptr(now.Add(4*time.Minute + 30*time.Second))
	heavy.LastFireAt, heavy.LastRunID = ptr(now.Add(-time.Minute-30*time.Second)), runID(104)
	heavy.Skipped = api.SkipCounts{Misfire: 12, Overlap: 7, CatchupLimit: 3, Refused: 2}
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	heavy.RecentSkips = []api.SkippedFires{ // oldest first, as the API lists them
		{Reason: api.SkipMisfire, From: at(5 * time.Hour), To: at(4*time.Hour + 5*time.Minute), Count: 12, RecordedAt: at(4 * time.Hour)},
		{Reason: api.SkipCatchupLimit, From: at(3*time.Hour + 30*time.Minute), To: at(3*time.Hour + 20*time.Minute), Count: 3, RecordedAt: at(3 * time.Hour)},
		{Reason: api.SkipOverlap, From: at(2 * time.Hour), To: at(2 * time.Hour), Count: 1, RecordedAt: at(2 * time.Hour)},
		{Reason: api.SkipRefused, From: at(time.Hour), To: at(time.Hour), Count: 1, RecordedAt: at(time.Hour), Message: refusal},
	}

	ended := schedule("leap-day", now)
	ended.Cron = "0 0 30 2 *"
	ended.NextFireAt = nil

	return []api.Schedule{active, buffered, ended, fresh, paused, heavy}
}

// apiTime is t as the API encodes it.
func apiTime(t time.Time) string { return t.Format(time.RFC3339Nano) }
