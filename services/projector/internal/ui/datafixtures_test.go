package ui_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// This file holds runs of plans that carry data, built from their events
// with the reducer, so that the snapshot the fake serves and the step
// details it computes from the same events agree as the projector's do.

// scripted is one event of a fixture run; data is marshalled as eventData.
type scripted struct {
	typ     events.Type
	step    string
	logical string
	engine  string
	data    any
}

// projectedRun builds a run of plan planJSON from script: the RunApproved
// (with input and the plan) first, then script, a second apart, ending at
// now; the view is the reducer's snapshot of those events.
func projectedRun(t *testing.T, id string, now time.Time, planJSON string, input any, script []scripted) (api.RunView, []events.Event) {
	t.Helper()
	var p struct {
		PlanID      string         `json:"planId"`
		PlanVersion string         `json:"planVersion"`
		Steps       []api.PlanStep `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(planJSON), &p))
	rawInput, err := json.Marshal(input)
	require.NoError(t, err)
	script = append([]scripted{{typ: events.RunApproved, data: events.RunApprovedData{TenantID: "acme", ProjectID: "shop",
		EnvironmentID: "prod", PlanID: p.PlanID, PlanVersion: p.PlanVersion, Input: rawInput, Plan: json.RawMessage(planJSON)}}}, script...)
	start := now.Add(-time.Duration(len(script)) * time.Second)
	evs := make([]events.Event, len(script))
	for i, s := range script {
		var data json.RawMessage
		if s.data != nil {
			data, err = json.Marshal(s.data)
			require.NoError(t, err)
		}
		at := start.Add(time.Duration(i+1) * time.Second)
		evs[i] = events.Event{SchemaVersion: events.SchemaVersion, RunID: id, RunSeq: int64(i + 1),
			EventID: fmt.Sprintf("%s-%d", id, i+1), StepID: s.step, LogicalAttemptID: s.logical, EngineAttemptID: s.engine,
			EventType: s.typ, EventData: data, EmittedAt: at, PersistedAt: at,
			IdempotencyKey: fmt.Sprintf("%s:%s:%s:%s", id, s.step, s.logical, s.typ)}
	}
	snap, err := events.Project(id, evs)
	require.NoError(t, err)
	v := api.RunView{RunSnapshot: snap, CreatedAt: start, UpdatedAt: now}
	v.TenantID, v.ProjectID, v.EnvironmentID, v.PlanID, v.PlanVersion = "acme", "shop", "prod", p.PlanID, p.PlanVersion
	for i := range p.Steps {
		if p.Steps[i].DependsOn == nil {
			p.Steps[i].DependsOn = []string{}
		}
	}
	v.Plan.Steps = p.Steps
	return v, evs
}

// ordersPlan has a step with a resolved input, one whose condition is
// false, a forEach over the orders, a step with a static input and one
// after the fan-out.
const ordersPlan = `{"schemaVersion":2,"planId":"orders","planVersion":"v3","steps":[
 {"id":"load","activity":"db.query","input":{"ids":"${{ input.orders }}"}},
 {"id":"check","activity":"fraud.check","dependsOn":["load"],"if":"input.risky"},
 {"id":"notify","activity":"mail.send","dependsOn":["load"],"input":{"to":"ops@example.com"}},
 {"id":"ship","activity":"ship.order","dependsOn":["load"],"forEach":"steps.load.output.rows","input":{"order":"${{ item }}"}},
 {"id":"report","activity":"report.write","dependsOn":["ship","check","notify"]}]}`

// bigRows is load's resolved input: long enough that its pretty JSON is
// cut.
func bigRows() map[string]any {
	ids := make([]int, 400)
	for i := range ids {
		ids[i] = 1000 + i
	}
	return map[string]any{"ids": ids}
}

// ordersRun is a RUNNING run of ordersPlan: load retried once (a worker
// per attempt) and completed; check skipped for its false condition;
// notify ran the plan's static input; ship fans out over 60 orders, 55
// done, 1 failed, 2 running and 2 not scheduled yet.
func ordersRun(t *testing.T, now time.Time) (api.RunView, []events.Event) {
	t.Helper()
	timeout := events.StepError{Code: "TIMEOUT", Message: "the database did not answer in 30s", Retryable: true}
	script := []scripted{
		{typ: events.RunStarted},
		{events.StepScheduled, "load", "1", "", events.StepScheduledData{Activity: "db.query", Queue: "default", Input: mustJSON(t, bigRows())}},
		{events.StepStarted, "load", "1", "1", events.StepStartedData{WorkerID: "worker-a"}},
		{events.StepFailed, "load", "1", "1", events.StepFailedData{Error: timeout}},
		{events.StepRetryScheduled, "load", "1", "", events.StepRetryScheduledData{Error: timeout, RetryAt: now.Add(-time.Hour), NextLogicalAttemptID: "2"}},
		{events.StepScheduled, "load", "2", "", events.StepScheduledData{Activity: "db.query", Queue: "default", Input: mustJSON(t, bigRows())}},
		{events.StepStarted, "load", "2", "1", events.StepStartedData{WorkerID: "worker-b"}},
		{events.StepCompleted, "load", "2", "1", events.StepCompletedData{Output: json.RawMessage(`{"currency":"EUR","total":60}`)}},
		{events.StepSkipped, "check", "1", "", map[string]string{"reason": "CONDITION_FALSE", "condition": "check"}},
		{events.StepScheduled, "notify", "1", "", events.StepScheduledData{Activity: "mail.send", Queue: "default"}},
		{events.StepStarted, "notify", "1", "1", events.StepStartedData{WorkerID: "worker-a"}},
		{events.StepCompleted, "notify", "1", "1", events.StepCompletedData{Output: json.RawMessage(`{"sent":true}`)}},
		{events.StepScheduled, "ship", "1", "", events.StepScheduledData{Activity: "ship.order", Queue: "default",
			Input: json.RawMessage(`[` + seq(60) + `]`), ForEach: &events.ForEachData{Count: 60, MaxParallel: 5}}},
		{events.StepStarted, "ship", "1", "", events.StepStartedData{}},
	}
	for i := range 58 {
		child := events.ChildStepID("ship", i)
		script = append(script,
			scripted{events.StepScheduled, child, "1", "", events.StepScheduledData{Activity: "ship.order", Queue: "default",
				Input: json.RawMessage(fmt.Sprintf(`{"order":%d}`, i))}},
			scripted{events.StepStarted, child, "1", "1", events.StepStartedData{WorkerID: fmt.Sprintf("worker-%d", i%3)}})
		switch {
		case i < 55:
			script = append(script, scripted{events.StepCompleted, child, "1", "1",
				events.StepCompletedData{Output: json.RawMessage(fmt.Sprintf(`{"tracking":"TRK-%d"}`, i))}})
		case i == 55:
			script = append(script, scripted{events.StepFailed, child, "1", "1",
				events.StepFailedData{Error: events.StepError{Code: "ADDRESS_INVALID", Message: "no such street"}}})
		}
	}
	return projectedRun(t, "0193b000-7c41-7a8e-9d1f-3b2c5e8f0001", now, ordersPlan,
		map[string]any{"customer": "acme", "risky": false}, script)
}

// completedRun is a COMPLETED run of a one-step plan with an input and a
// long output.
func completedRun(t *testing.T, now time.Time) (api.RunView, []events.Event) {
	t.Helper()
	lines := make([]string, 300)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %03d of the invoice", i)
	}
	return projectedRun(t, "0193b000-7c41-7a8e-9d1f-3b2c5e8f0002", now,
		`{"planId":"invoice","planVersion":"v1","steps":[{"id":"render","activity":"pdf.render"}]}`,
		map[string]any{"invoiceId": "INV-42", "lines": 300},
		[]scripted{
			{typ: events.RunStarted},
			{events.StepStarted, "render", "1", "1", events.StepStartedData{WorkerID: "worker-a"}},
			{events.StepCompleted, "render", "1", "1", events.StepCompletedData{}},
			{typ: events.RunCompleted, data: map[string]any{"output": map[string]any{"invoiceId": "INV-42", "lines": lines}}},
		})
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// seq is "0,1,…,n-1".
func seq(n int) string {
	b := []byte{}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", i)
	}
	return string(b)
}
