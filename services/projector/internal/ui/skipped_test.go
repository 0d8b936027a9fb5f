package ui_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// retriedSkipRun is a FAILED run of fetch → report: fetch failed, which
// skipped report; a RETRY_STEP of fetch reopened the run and brought
// report back as its logical attempt 2; fetch failed again and report was
// skipped again, never having run.
func retriedSkipRun(t *testing.T, now time.Time) (api.RunView, []events.Event) {
	t.Helper()
	boom := events.StepError{Code: "FETCH_FAILED", Message: "the upstream answered 500"}
	skip := map[string]string{"reason": "DEPENDENCY_FAILED"}
	return projectedRun(t, "0193b000-7c41-7a8e-9d1f-3b2c5e8f0010", now,
		`{"planId":"digest","planVersion":"v1","steps":[{"id":"fetch","activity":"http.get"},{"id":"report","activity":"mail.send","dependsOn":["fetch"]}]}`,
		nil, []scripted{
			{typ: events.RunStarted},
			{events.StepScheduled, "fetch", "1", "", events.StepScheduledData{Activity: "http.get", Queue: "default"}},
			{events.StepStarted, "fetch", "1", "1", events.StepStartedData{WorkerID: "worker-a"}},
			{events.StepFailed, "fetch", "1", "1", events.StepFailedData{Error: boom}},
			{events.StepSkipped, "report", "1", "", skip},
			{typ: events.RunFailed, data: map[string]any{"error": boom}},
			{typ: events.RunResumed, logical: "1"},
			{events.StepRetryScheduled, "fetch", "1", "", events.StepRetryScheduledData{Error: boom, RetryAt: now, NextLogicalAttemptID: "2"}},
			{events.StepRetryScheduled, "report", "1", "", events.StepRetryScheduledData{
				Error: events.StepError{Code: events.CodeSkipped, Message: `brought back by RETRY_STEP of "fetch"`}, RetryAt: now, NextLogicalAttemptID: "2"}},
			{events.StepScheduled, "fetch", "2", "", events.StepScheduledData{Activity: "http.get", Queue: "default"}},
			{events.StepStarted, "fetch", "2", "1", events.StepStartedData{WorkerID: "worker-b"}},
			{events.StepFailed, "fetch", "2", "1", events.StepFailedData{Error: boom}},
			{events.StepSkipped, "report", "2", "", skip},
			{typ: events.RunFailed, logical: "2", data: map[string]any{"error": boom}},
		})
}

// TestSkippedStepReadsSkipped: a skipped step's detail says it has no
// output because it was skipped (not "yet", which reads as pending), and a
// skipped step that never ran shows no "Retry #n" badge, though a
// RETRY_STEP moved it to its logical attempt 2. The step that did run
// twice keeps its badge.
func TestSkippedStepReadsSkipped(t *testing.T) {
	t.Parallel()
	v, evs := retriedSkipRun(t, time.Now())
	var report events.StepSnapshot
	for _, st := range v.Steps {
		if st.StepID == "report" {
			report = st
		}
	}
	require.Equal(t, events.StepStatusSkipped, report.Status)
	require.Equal(t, "2", report.LogicalAttemptID, "the fixture's skipped step is at its second logical attempt")
	require.Zero(t, report.Attempts, "and never started")

	b := openRun(t, v, evs)
	b.waitFor(`document.querySelectorAll('[data-testid="step"]').length === 2`)
	badge := func(id string) string {
		return eval[string](b, `document.querySelector('[data-testid="step"][data-step-id=`+js(id)+`] [data-testid="step-attempt"]')?.textContent ?? ''`)
	}
	assert.Empty(t, badge("report"), "a step that never ran is no retry")
	assert.Equal(t, "Retry #1", badge("fetch"))

	b.openStep("report")
	assert.Equal(t, "No output: the step was skipped.", panelText(b, "detail-output-none"))
	b.openStep("fetch")
	assert.Equal(t, "No output: the step failed.", panelText(b, "detail-output-none"))
	b.console.RequireNoErrors(t)
}
