package decide

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// withInput returns s with its input set to doc.
func withInput(s plan.Step, doc string) plan.Step {
	s.Input = json.RawMessage(doc)
	return s
}

// scheduledInput returns the input the decision's StepScheduled of step
// recorded, or "" when it recorded none.
func scheduledInput(t *testing.T, d Decision, step string) string {
	t.Helper()
	for _, e := range d.Events {
		if e.Type == events.StepScheduled && e.StepID == step {
			data, ok := e.Data.(stepScheduledData)
			require.True(t, ok)
			return string(data.Input)
		}
	}
	require.Fail(t, "no StepScheduled", "step %s in %v", step, descs(d.Events))
	return ""
}

func TestExpressionsResolveFromRunInputAndOutputs(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{TenantID: "acme", EnvironmentID: "prod",
		Input: json.RawMessage(`{"order": {"id": 7, "items": ["a", "b"]}}`)},
		withInput(act("fetch"), `{"id": "${{ input.order.id }}", "static": true}`),
		withInput(act("pay", "fetch"), `{"n": "${{ steps.fetch.output.count + 1 }}", "who": "${{ run.tenantId }}/${{ run.environmentId }}"}`),
		withInput(act("plain", "fetch"), `{"text": "no expressions"}`),
	)
	d := b.decide(approve())
	require.Equal(t, []string{"fetch/1"}, taskIDs(d))
	require.JSONEq(t, `{"id": 7, "static": true}`, string(d.Tasks[0].Input))
	require.JSONEq(t, `{"id": 7, "static": true}`, scheduledInput(t, d, "fetch"), "the resolved input is recorded")

	b.decide(start("fetch", 1))
	d = b.decide(ResultCompleted{StepID: "fetch", LogicalAttempt: 1, EngineAttemptID: "1", Output: json.RawMessage(`{"count": 41}`)})
	require.Equal(t, []string{"pay/1", "plain/1"}, taskIDs(d))
	require.JSONEq(t, `{"n": 42, "who": "acme/prod"}`, string(d.Tasks[0].Input))
	require.JSONEq(t, `{"text": "no expressions"}`, string(d.Tasks[1].Input))
	require.Empty(t, scheduledInput(t, d, "plain"), "a plan's own input is not recorded again")

	// A resend reads the record: the same bytes, however the state moved.
	d = b.decide(Resync{TaskGrace: 0, Now: later.Add(plan.DefaultTimeout)})
	require.Contains(t, taskIDs(d), "pay/1")
	for _, tk := range d.Tasks {
		if tk.StepID == "pay" {
			require.JSONEq(t, `{"n": 42, "who": "acme/prod"}`, string(tk.Input))
		}
	}

	// The state a checkpoint restores evaluates the same.
	cp, err := MarshalCheckpoint(b.p, b.s)
	require.NoError(t, err)
	restored, err := RestoreCheckpoint(b.p, cp)
	require.NoError(t, err)
	require.Equal(t, b.s, restored)
}

func TestExpressionErrorFailsTheStepForGood(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(`{"a": 1}`)},
		withRetry(withInput(act("x"), `{"v": "${{ input.missing }}"}`), 5, 0),
		act("after", "x"),
	)
	d := b.decide(approve())
	require.Empty(t, d.Tasks)
	require.Equal(t, []string{"RunStarted", "StepFailed x 1", "StepSkipped after 1", "RunFailed 1"}, descs(d.Events))
	failed := d.Events[1].Data.(events.StepFailedData).Error
	require.Equal(t, CodeExpressionError, failed.Code)
	require.False(t, failed.Retryable)
	require.Contains(t, failed.Message, "input.v: no such key: missing")
}

// A resolved input over the step input limit fails the step; one at the
// limit is dispatched.
func TestResolvedInputLimit(t *testing.T) {
	t.Parallel()
	pad := func(n int) string { return strings.Repeat("x", n) }
	// {"v":"<s>"} is 8 bytes around s.
	for _, c := range []struct {
		size int
		ok   bool
	}{{plan.DefaultMaxStepInputBytes, true}, {plan.DefaultMaxStepInputBytes + 1, false}} {
		in, err := json.Marshal(map[string]string{"s": pad(c.size - 8)})
		require.NoError(t, err)
		b := setupWith(t, events.RunApprovedData{Input: in}, withInput(act("x"), `{"v": "${{ input.s }}"}`))
		d := b.decide(approve())
		if c.ok {
			require.Equal(t, []string{"x/1"}, taskIDs(d))
			require.Len(t, d.Tasks[0].Input, c.size)
		} else {
			require.Empty(t, d.Tasks)
			require.Contains(t, descs(d.Events), "StepFailed x 1")
		}
	}
}

// withIf returns s with condition cond.
func withIf(s plan.Step, cond string) plan.Step {
	s.If = cond
	return s
}

// A false condition skips its step and the steps after it; the rest of
// the run goes on, and a run whose steps all succeeded or were skipped so
// completes.
func TestConditionSkipsStepAndDependants(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(`{"express": false}`)},
		act("a"),
		withIf(act("ship-express", "a"), "input.express"),
		act("notify-express", "ship-express"),
		withIf(act("ship-normal", "a"), "${{ !input.express && steps.a.output.ok }}"),
		withIf(wait("gate", "go", 0, "a"), "steps.a.status != 'SUCCESS'"),
	)
	b.decide(approve())
	b.decide(start("a", 1))
	d := b.decide(done("a", 1))
	require.Equal(t, []string{
		"StepCompleted a 1",
		"StepSkipped ship-express 1", "StepSkipped notify-express 1",
		"StepScheduled ship-normal 1",
		"StepSkipped gate 1",
	}, descs(d.Events))
	require.Equal(t, stepSkippedData{StepSkippedData: events.StepSkippedData{Reason: plan.ConditionFalse}, Condition: "ship-express"},
		d.Events[1].Data)
	require.Equal(t, stepSkippedData{StepSkippedData: events.StepSkippedData{Reason: `dependency "ship-express" was skipped`}, Condition: "ship-express"},
		d.Events[2].Data)
	b.decide(start("ship-normal", 1))
	d = b.decide(done("ship-normal", 1))
	require.Equal(t, []string{"StepCompleted ship-normal 1", "RunCompleted"}, descs(d.Events))
}

func TestConditionThatCannotBeEvaluatedFailsTheStep(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(`{"n": "text"}`)},
		withIf(act("a"), "input.n > 1"))
	d := b.decide(approve())
	require.Equal(t, []string{"RunStarted", "StepFailed a 1", "RunFailed 1"}, descs(d.Events))
	failed := d.Events[1].Data.(events.StepFailedData).Error
	require.Equal(t, CodeExpressionError, failed.Code)
	require.Contains(t, failed.Message, "if: no such overload")
}

// RETRY_STEP brings back the steps a failure skipped, not those a false
// condition did: their conditions read ancestors that all succeeded.
func TestRetryStepLeavesConditionSkipsAlone(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(`{"n": 0}`)},
		act("a"),
		withIf(act("never", "a"), "input.n > 0"),
		act("after-never", "never"),
		act("b", "a"),
		act("after-b", "b"),
	)
	b.decide(approve())
	b.decide(start("a", 1))
	b.decide(done("a", 1))
	b.decide(start("b", 1))
	d := b.decide(fail("b", 1, false))
	require.Equal(t, []string{"StepFailed b 1", "StepSkipped after-b 1", "RunFailed 1"}, descs(d.Events))

	d = b.decide(retryStep(1, "b"))
	require.Equal(t, []string{"b", "after-b"}, applied(t, d).StepIDs)
	require.Equal(t, events.StepStatusSkipped, b.s.Steps["never"].Status)
	require.Equal(t, events.StepStatusSkipped, b.s.Steps["after-never"].Status)
	b.decide(start("b", 2))
	d = b.decide(done("b", 2))
	require.Equal(t, []string{"StepCompleted b 2", "StepScheduled after-b 2"}, descs(d.Events))
}

// setupPlanOutput is setupWith for a plan whose output is out.
func setupPlanOutput(t *testing.T, input, out string, steps ...plan.Step) *bundle {
	t.Helper()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(input)}, steps...)
	b.p.Output = out
	require.NoError(t, b.p.Validate(plan.Limits{}))
	return b
}

// The plan's output is evaluated when the run completes and recorded on
// RunCompleted; one that cannot be evaluated fails the run.
func TestRunOutput(t *testing.T) {
	t.Parallel()
	b := setupPlanOutput(t, `{"who": "Ada"}`, `{"who": input.who, "a": steps.a.output, "skipped": steps.b.status}`,
		act("a"), withIf(act("b"), "false"))
	b.decide(approve())
	b.decide(start("a", 1))
	d := b.decide(done("a", 1))
	last := d.Events[len(d.Events)-1]
	require.Equal(t, events.RunCompleted, last.Type)
	require.JSONEq(t, `{"who": "Ada", "a": {"ok": true}, "skipped": "SKIPPED"}`,
		string(last.Data.(events.RunCompletedData).Output))

	b = setupPlanOutput(t, `{}`, `steps.b.output`, act("a"), withIf(act("b"), "false"))
	b.decide(approve())
	b.decide(start("a", 1))
	d = b.decide(done("a", 1))
	last = d.Events[len(d.Events)-1]
	require.Equal(t, events.RunFailed, last.Type)
	failed := last.Data.(events.RunFailedData)
	require.Equal(t, CodeExpressionError, failed.Error.Code)
	require.Contains(t, failed.Error.Message, "output: no such key: output", "a skipped step has no output")
	require.Equal(t, events.RunStatusFailed, b.s.Status)
}
