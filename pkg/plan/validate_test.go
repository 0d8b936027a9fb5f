package plan

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    *Plan
	}{
		{"zero fields mean defaults", validPlan()},
		{"with defaults applied", func() *Plan { p := validPlan(); p.ApplyDefaults(); return p }()},
		{"signal names are case-sensitive", planWith(Step{ID: "w", Kind: KindWaitSignal, Signal: "pause"})},
		{"waitSignal with a timeout", planWith(Step{ID: "w", Kind: KindWaitSignal, Signal: "go", Timeout: Duration(1)})},
		{"unicode ids", planWith(step("étape-1"), step("шаг_2", "étape-1"))},
		{"declared secret reference", planWith(Step{
			ID: "a", Activity: "echo", Secrets: []SecretRef{{Name: "db", Provider: "file", Key: "/run/secrets/db password"}},
			Input: json.RawMessage(`{"password":{"secretRef":"db"},"user":"weft"}`),
		})},
		{"explicit zero jitter and backoff", planWith(Step{
			ID: "a", Activity: "echo", Retry: &RetryPolicy{MaxAttempts: 1, MaxBackoff: 1, Multiplier: 1},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, err := json.Marshal(tt.p)
			require.NoError(t, err)
			require.NoError(t, tt.p.Validate(Limits{}))
			after, err := json.Marshal(tt.p)
			require.NoError(t, err)
			require.Equal(t, string(before), string(after), "Validate must not modify the plan")
		})
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	activity := func(mut func(s *Step)) func(p *Plan) {
		return func(p *Plan) { mut(&p.Steps[1]) }
	}
	wait := func(mut func(s *Step)) func(p *Plan) {
		return func(p *Plan) {
			p.Steps[1] = Step{ID: "b", Kind: KindWaitSignal, Signal: "go", DependsOn: []string{"a"}}
			mut(&p.Steps[1])
		}
	}
	retry := func(mut func(r *RetryPolicy)) func(p *Plan) {
		return activity(func(s *Step) { r := DefaultRetryPolicy(); mut(&r); s.Retry = &r })
	}
	tests := []struct {
		name   string
		mutate func(p *Plan)
		code   string
		stepID string
		field  string
	}{
		{"empty plan", func(p *Plan) { p.Steps = nil }, CodeEmptyPlan, "", "steps"},
		{"missing planId", func(p *Plan) { p.PlanID = "" }, CodeMissingField, "", "planId"},
		{"missing planVersion", func(p *Plan) { p.PlanVersion = "" }, CodeMissingField, "", "planVersion"},
		{"invalid planId", func(p *Plan) { p.PlanID = "a.b" }, CodeInvalidID, "", "planId"},
		{"invalid planVersion", func(p *Plan) { p.PlanVersion = "1 2" }, CodeInvalidID, "", "planVersion"},
		{"newer schema version", func(p *Plan) { p.SchemaVersion = SchemaVersion + 1 }, CodeUnsupportedSchemaVersion, "", "schemaVersion"},
		{"duplicate step id", activity(func(s *Step) { s.ID = "a"; s.DependsOn = nil }), CodeDuplicateStepID, "a", "id"},
		{"missing step id", activity(func(s *Step) { s.ID = "" }), CodeMissingField, "", "steps[1].id"},
		{"invalid step id", activity(func(s *Step) { s.ID = "b.c" }), CodeInvalidID, "b.c", "id"},
		{"unknown dependency", activity(func(s *Step) { s.DependsOn = []string{"zz"} }), CodeUnknownDependency, "b", "dependsOn"},
		{"empty dependency", activity(func(s *Step) { s.DependsOn = []string{""} }), CodeUnknownDependency, "b", "dependsOn"},
		{"self dependency", activity(func(s *Step) { s.DependsOn = []string{"a", "b"} }), CodeSelfDependency, "b", "dependsOn"},
		{"duplicate dependency", activity(func(s *Step) { s.DependsOn = []string{"a", "a"} }), CodeDuplicateDependency, "b", "dependsOn"},
		{"unknown kind", activity(func(s *Step) { s.Kind = "task" }), CodeInvalidKind, "b", "kind"},
		{"kind in the wrong case", activity(func(s *Step) { s.Kind = "WaitSignal" }), CodeInvalidKind, "b", "kind"},
		{"missing activity", activity(func(s *Step) { s.Activity = "" }), CodeMissingField, "b", "activity"},
		{"invalid activity", activity(func(s *Step) { s.Activity = "echo it" }), CodeInvalidName, "b", "activity"},
		{"signal on an activity step", activity(func(s *Step) { s.Signal = "go" }), CodeFieldNotAllowed, "b", "signal"},
		{"queue with a dot", activity(func(s *Step) { s.Queue = "q.1" }), CodeInvalidQueue, "b", "queue"},
		{"queue with a wildcard", activity(func(s *Step) { s.Queue = "q*" }), CodeInvalidQueue, "b", "queue"},
		{"reserved queue", activity(func(s *Step) { s.Queue = "$SYS" }), CodeInvalidQueue, "b", "queue"},
		{"negative timeout", activity(func(s *Step) { s.Timeout = -1 }), CodeInvalidTimeout, "b", "timeout"},
		{"zero attempts", retry(func(r *RetryPolicy) { r.MaxAttempts = 0 }), CodeInvalidRetry, "b", "retry.maxAttempts"},
		{"negative initial backoff", retry(func(r *RetryPolicy) { r.InitialBackoff = -1 }), CodeInvalidRetry, "b", "retry.initialBackoff"},
		{"zero max backoff", retry(func(r *RetryPolicy) { r.MaxBackoff = 0 }), CodeInvalidRetry, "b", "retry.maxBackoff"},
		{"max below initial backoff", retry(func(r *RetryPolicy) { r.MaxBackoff = r.InitialBackoff - 1 }), CodeInvalidRetry, "b", "retry.maxBackoff"},
		{"multiplier below 1", retry(func(r *RetryPolicy) { r.Multiplier = 0.5 }), CodeInvalidRetry, "b", "retry.multiplier"},
		{"NaN multiplier", retry(func(r *RetryPolicy) { r.Multiplier = math.NaN() }), CodeInvalidRetry, "b", "retry.multiplier"},
		{"infinite multiplier", retry(func(r *RetryPolicy) { r.Multiplier = math.Inf(1) }), CodeInvalidRetry, "b", "retry.multiplier"},
		{"jitter above 1", retry(func(r *RetryPolicy) { r.Jitter = 1.5 }), CodeInvalidRetry, "b", "retry.jitter"},
		{"negative jitter", retry(func(r *RetryPolicy) { r.Jitter = -0.1 }), CodeInvalidRetry, "b", "retry.jitter"},
		{"NaN jitter", retry(func(r *RetryPolicy) { r.Jitter = math.NaN() }), CodeInvalidRetry, "b", "retry.jitter"},
		{"empty error code", retry(func(r *RetryPolicy) { r.NonRetryableErrorCodes = []string{"X", ""} }), CodeInvalidRetry, "b", "retry.nonRetryableErrorCodes[1]"},
		{"invalid idempotency key", activity(func(s *Step) { s.IdempotencyKey = "k\n" }), CodeInvalidName, "b", "idempotencyKey"},
		{"waitSignal without signal", wait(func(s *Step) { s.Signal = "" }), CodeMissingField, "b", "signal"},
		{"waitSignal on PAUSE", wait(func(s *Step) { s.Signal = SignalPause }), CodeInvalidSignal, "b", "signal"},
		{"waitSignal on RESUME", wait(func(s *Step) { s.Signal = SignalResume }), CodeInvalidSignal, "b", "signal"},
		{"waitSignal on CANCEL", wait(func(s *Step) { s.Signal = SignalCancel }), CodeInvalidSignal, "b", "signal"},
		{"waitSignal on RETRY_STEP", wait(func(s *Step) { s.Signal = SignalRetryStep }), CodeInvalidSignal, "b", "signal"},
		{"waitSignal on an invalid name", wait(func(s *Step) { s.Signal = "a.b" }), CodeInvalidSignal, "b", "signal"},
		{"waitSignal with activity", wait(func(s *Step) { s.Activity = "echo" }), CodeFieldNotAllowed, "b", "activity"},
		{"waitSignal with queue", wait(func(s *Step) { s.Queue = "q" }), CodeFieldNotAllowed, "b", "queue"},
		{"waitSignal with retry", wait(func(s *Step) { r := DefaultRetryPolicy(); s.Retry = &r }), CodeFieldNotAllowed, "b", "retry"},
		{"waitSignal with secrets", wait(func(s *Step) { s.Secrets = []SecretRef{{Name: "s", Key: "K"}} }), CodeFieldNotAllowed, "b", "secrets"},
		{"waitSignal with input", wait(func(s *Step) { s.Input = json.RawMessage(`{}`) }), CodeFieldNotAllowed, "b", "input"},
		{"waitSignal with idempotency key", wait(func(s *Step) { s.IdempotencyKey = "k" }), CodeFieldNotAllowed, "b", "idempotencyKey"},
		{"waitSignal with negative timeout", wait(func(s *Step) { s.Timeout = -1 }), CodeInvalidTimeout, "b", "timeout"},
		{"secret without name", activity(func(s *Step) { s.Secrets = []SecretRef{{Key: "K"}} }), CodeMissingField, "b", "secrets[0].name"},
		{"secret with invalid name", activity(func(s *Step) { s.Secrets = []SecretRef{{Name: "a b", Key: "K"}} }), CodeInvalidID, "b", "secrets[0].name"},
		{"duplicate secret", activity(func(s *Step) { s.Secrets = []SecretRef{{Name: "s", Key: "K"}, {Name: "s", Key: "L"}} }), CodeDuplicateSecret, "b", "secrets[1].name"},
		{"secret without key", activity(func(s *Step) { s.Secrets = []SecretRef{{Name: "s"}} }), CodeMissingField, "b", "secrets[0].key"},
		{"secret key with a control character", activity(func(s *Step) { s.Secrets = []SecretRef{{Name: "s", Key: "K\x00"}} }), CodeInvalidName, "b", "secrets[0].key"},
		{"secret key too long", activity(func(s *Step) { s.Secrets = []SecretRef{{Name: "s", Key: strings.Repeat("k", maxSecretKeyBytes+1)}} }), CodeInvalidName, "b", "secrets[0].key"},
		{"secret provider invalid", activity(func(s *Step) { s.Secrets = []SecretRef{{Name: "s", Provider: "my vault", Key: "K"}} }), CodeInvalidName, "b", "secrets[0].provider"},
		{"secret value as key", activity(func(s *Step) {
			s.Secrets = []SecretRef{{Name: "s", Key: "ghp_" + strings.Repeat("a", 36)}}
		}), CodeSecretValue, "b", "secrets[0].key"},
		{"input not JSON", activity(func(s *Step) { s.Input = json.RawMessage(`{"a":`) }), CodeInvalidInput, "b", "input"},
		{"secret value in input", activity(func(s *Step) { s.Input = json.RawMessage(`{"db":{"password":"hunter2"}}`) }), CodeSecretValue, "b", "input.db.password"},
		{"credential shape in input", activity(func(s *Step) { s.Input = json.RawMessage(`{"args":["--key","AKIAIOSFODNN7EXAMPLE"]}`) }), CodeSecretValue, "b", "input.args[1]"},
		{"undeclared secret reference", activity(func(s *Step) { s.Input = json.RawMessage(`{"password":{"secretRef":"db"}}`) }), CodeUnknownSecretRef, "b", "input.password"},
		{"malformed secret reference", activity(func(s *Step) {
			s.Secrets = []SecretRef{{Name: "db", Key: "K"}}
			s.Input = json.RawMessage(`{"password":{"secretRef":"db","fallback":"x"}}`)
		}), CodeInvalidSecretRef, "b", "input.password"},
		{"non-string secret reference", activity(func(s *Step) { s.Input = json.RawMessage(`[{"secretRef":1}]`) }), CodeInvalidSecretRef, "b", "input[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := validPlan()
			tt.mutate(p)
			err := p.Validate(Limits{})
			got := requireProblem(t, err, tt.code, tt.stepID)
			require.Equal(t, tt.field, got.Field)
			require.NotContains(t, err.Error(), "hunter2")
			require.NotContains(t, err.Error(), "AKIAIOSFODNN7EXAMPLE")
			require.NotContains(t, err.Error(), "ghp_")
		})
	}
}

func TestValidateInvalidIDs(t *testing.T) {
	t.Parallel()
	for _, id := range []string{
		"a.b", "a*", "a>", ">", "$a", "a b", "a\tb", "a\nb", "a\x00b", "a\x7fb", "a\u00a0b", "a\u2028b",
		"\u200b", "a\u202eb", "a\xffb", strings.Repeat("x", DefaultMaxIDBytes+1),
	} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			err := planWith(step(id)).Validate(Limits{})
			requireProblem(t, err, CodeInvalidID, id)
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	t.Parallel()
	p := planWith(step("a"), step("b", "zz"))
	require.EqualError(t, p.Validate(Limits{}), `plan: step "b": dependsOn: unknown step "zz"`)

	p = planWith(step("a"), step(""), step("b", "a", "a"))
	p.PlanID = ""
	require.EqualError(t, p.Validate(Limits{}),
		`plan: 3 problems: planId: required; steps[1].id: required; step "b": dependsOn: step "a" is listed twice`)

	var steps []Step
	for range 12 {
		steps = append(steps, step("x"))
	}
	err := planWith(steps...).Validate(Limits{})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 11)
	require.True(t, strings.HasSuffix(err.Error(), "; and 1 more"), err.Error())
	require.Equal(t, "plan: invalid", (&ValidationError{}).Error())
}

func TestValidateOrderIsStable(t *testing.T) {
	t.Parallel()
	p := planWith(step("c", "b"), step("a", "zz"), step("b", "c"), step("a"))
	p.PlanVersion = ""
	err := p.Validate(Limits{})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	codes := make([]string, 0, len(ve.Problems))
	for _, pr := range ve.Problems {
		codes = append(codes, pr.StepID+":"+pr.Code)
	}
	require.Equal(t, []string{
		":" + CodeMissingField, "a:" + CodeUnknownDependency, "a:" + CodeDuplicateStepID, "c:" + CodeCycle,
	}, codes)
	for range 10 {
		require.Equal(t, err, p.Validate(Limits{}))
	}
}

func TestValidateLimits(t *testing.T) {
	t.Parallel()
	p := validPlan()
	require.NoError(t, p.Validate(Limits{MaxSteps: 2}))
	requireProblem(t, p.Validate(Limits{MaxSteps: 1}), CodeTooManySteps, "")

	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.NoError(t, p.Validate(Limits{MaxPlanBytes: len(b)}), "encoded size exactly at the limit")
	requireProblem(t, p.Validate(Limits{MaxPlanBytes: len(b) - 1}), CodePlanTooLarge, "")

	p.Steps[0].Input = json.RawMessage(`[ 1, 2 ]`) // compact: [1,2], 5 bytes
	require.NoError(t, p.Validate(Limits{MaxStepInputBytes: 5}))
	requireProblem(t, p.Validate(Limits{MaxStepInputBytes: 4}), CodeInputTooLarge, "a")

	require.NoError(t, planWith(step("abcd")).Validate(Limits{MaxIDBytes: 4}))
	requireProblem(t, planWith(step("abcde")).Validate(Limits{MaxIDBytes: 4}), CodeInvalidID, "abcde")
}
