package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTestdata(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file  string
		topo  []string
		roots []string
		check func(t *testing.T, p *Plan)
	}{
		{
			file: "hello.yaml", topo: []string{"fetch", "transform", "publish"}, roots: []string{"fetch"},
			check: func(t *testing.T, p *Plan) {
				s, ok := p.Step("publish")
				require.True(t, ok)
				require.Equal(t, "publishers", s.Queue)
				require.Equal(t, Duration(DefaultTimeout), s.Timeout)
				require.Equal(t, &RetryPolicy{
					MaxAttempts: 5, InitialBackoff: Duration(500 * time.Millisecond), MaxBackoff: Duration(10 * time.Second),
					Multiplier: DefaultMultiplier, Jitter: DefaultJitter, NonRetryableErrorCodes: []string{"BAD_REQUEST"},
				}, s.Retry)
				require.JSONEq(t, `{"authToken":{"secretRef":"webhook"}}`, string(s.Input))
			},
		},
		{
			file: "fanout.json", topo: []string{"split", "work-1", "work-2", "work-3", "work-4", "join"}, roots: []string{"split"},
			check: func(t *testing.T, p *Plan) {
				require.Equal(t, []string{"work-1", "work-2", "work-3", "work-4", "join"}, p.Dependants("split"))
				s, _ := p.Step("work-4")
				require.Equal(t, 2, s.Retry.MaxAttempts)
				require.Zero(t, s.Retry.Jitter, "an explicit jitter of 0 is kept, not defaulted")
			},
		},
		{
			file: "gate.yaml", topo: []string{"build", "approval", "deploy"}, roots: []string{"build"},
			check: func(t *testing.T, p *Plan) {
				s, _ := p.Step("approval")
				require.Equal(t, Step{
					ID: "approval", Kind: KindWaitSignal, Signal: "approve", DependsOn: []string{"build"},
					Timeout: Duration(24 * time.Hour),
				}, *s, "a waitSignal step gets no activity defaults")
				d, _ := p.Step("deploy")
				require.Equal(t, "deploy-v3", d.IdempotencyKey)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(readTestdata(t, tt.file), Limits{})
			require.NoError(t, err)
			require.Equal(t, 1, p.SchemaVersion, "a plan without expressions is of version 1")
			require.Equal(t, tt.topo, p.TopoOrder())
			require.Equal(t, tt.roots, p.Roots())
			tt.check(t, p)
			requireRoundTrip(t, p)
		})
	}
}

func TestParseJSONAndYAMLEqual(t *testing.T) {
	t.Parallel()
	fromYAML, err := Parse(readTestdata(t, "hello.yaml"), Limits{})
	require.NoError(t, err)
	fromJSON, err := Parse(readTestdata(t, "hello.json"), Limits{})
	require.NoError(t, err)
	require.Equal(t, fromJSON, fromYAML)
}

// requireRoundTrip asserts that p survives json.Marshal and Parse unchanged
// and that its encoding is stable.
func requireRoundTrip(t *testing.T, p *Plan) {
	t.Helper()
	b, err := json.Marshal(p)
	require.NoError(t, err)
	again, err := Parse(b, Limits{})
	require.NoError(t, err)
	require.Equal(t, p, again)
	b2, err := json.Marshal(again)
	require.NoError(t, err)
	require.Equal(t, string(b), string(b2))
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(`{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","input":{ "b" : [1, 2] , "a":"<x>" }}]}`), Limits{})
	require.NoError(t, err)
	want := DefaultRetryPolicy()
	require.Equal(t, &Plan{
		SchemaVersion: 1, PlanID: "p", PlanVersion: "1",
		Steps: []Step{{
			ID: "a", Kind: KindActivity, Activity: "echo", Queue: DefaultQueue,
			Timeout: Duration(DefaultTimeout), Retry: &want,
			Input: json.RawMessage(`{"b":[1,2],"a":"\u003cx\u003e"}`),
		}},
	}, p, "input is compacted as json.Marshal writes it, key order kept")
	requireRoundTrip(t, p)
}

func TestParseNullMeansAbsent(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte("planId: p\nplanVersion: v\nsteps:\n  - id: a\n    activity: echo\n    retry:\n    input:\n    dependsOn:\n"), Limits{})
	require.NoError(t, err)
	require.Equal(t, DefaultRetryPolicy(), *p.Steps[0].Retry)
	require.Nil(t, p.Steps[0].Input)
	require.Nil(t, p.Steps[0].DependsOn)
}

func TestParseStrict(t *testing.T) {
	t.Parallel()
	const steps = `"steps":[{"id":"a","activity":"echo"}]`
	tests := []struct {
		name  string
		doc   string
		code  string
		step  string // the problem's StepID
		field string // the problem's Field
		msg   string // a substring of its message
	}{
		{"unknown field", `{"planId":"p","planVersion":"1","owner":"x",` + steps + `}`, CodeUnknownField, "", "owner", `unknown field "owner"`},
		{"unknown field in a step", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","when":"now"}]}`, CodeUnknownField, "a", "when", ""},
		{"unknown field in retry", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","retry":{"attempts":3}}]}`, CodeUnknownField, "a", "retry.attempts", ""},
		{"unknown field in a secret", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","secrets":[{"name":"s","key":"K","value":"v"}]}]}`, CodeUnknownField, "a", "secrets[0].value", ""},
		{"key in the wrong case: ID", `{"planId":"p","planVersion":"1","steps":[{"ID":"a","activity":"echo"}]}`, CodeUnknownField, "", "steps[0].ID", `did you mean "id"?`},
		{"key in the wrong case: Steps", `{"planId":"p","planVersion":"1","Steps":[{"id":"a","activity":"echo"}]}`, CodeUnknownField, "", "Steps", `did you mean "steps"?`},
		{"key in the wrong case: planID", `{"planID":"p","planVersion":"1",` + steps + `}`, CodeUnknownField, "", "planID", ""},
		{"key in the wrong case in YAML", "planId: p\nplanVersion: v\nsteps:\n  - id: a\n    Activity: echo\n", CodeUnknownField, "a", "Activity", ""},
		{"duplicate key", `{"planId":"p","planId":"q","planVersion":"1",` + steps + `}`, CodeDuplicateKey, "", "", `key "planId"`},
		{"duplicate key by escape", `{"planId":"p","planVersion":"1","steps":[{"id":"a","\u0069d":"b","activity":"echo"}]}`, CodeDuplicateKey, "", "steps[0]", ""},
		{"duplicate key in input", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","input":{"x":{"y":1,"y":2}}}]}`, CodeDuplicateKey, "a", "input.x", ""},
		{"duplicate key in YAML", "planId: p\nplanId: q\nplanVersion: v\nsteps: []\n", CodeMalformed, "", "", "already set"},
		{"trailing object", `{"planId":"p","planVersion":"1",` + steps + `} {}`, CodeMalformed, "", "", "trailing data"},
		{"trailing garbage", `{"planId":"p","planVersion":"1",` + steps + `}x`, CodeMalformed, "", "", "trailing data"},
		{"second YAML document", "planId: p\nplanVersion: v\nsteps: [{id: a, activity: echo}]\n---\nplanId: q\n", CodeMalformed, "", "", "more than one YAML document"},
		{"invalid UTF-8 in an id", "{\"planId\":\"p\",\"planVersion\":\"1\",\"steps\":[{\"id\":\"a\xffb\",\"activity\":\"echo\"}]}", CodeMalformed, "", "", "invalid UTF-8 at byte offset 49"},
		{"invalid UTF-8 in YAML", "planId: p\xc3\n", CodeMalformed, "", "", "invalid UTF-8 at byte offset 9"},
		{"lone surrogate escape", `{"planId":"p\ud800","planVersion":"1",` + steps + `}`, CodeMalformed, "", "", "surrogate"},
		{"reversed surrogate pair", `{"planId":"p\udc00\ud800","planVersion":"1",` + steps + `}`, CodeMalformed, "", "", "surrogate"},
		{"syntax error", `{"planId":"p",}`, CodeMalformed, "", "", "invalid JSON"},
		{"truncated", `{"planId":"p"`, CodeMalformed, "", "", "invalid JSON"},
		{"top level array", `[{"planId":"p"}]`, CodeMalformed, "", "", "must be a JSON object"},
		{"top level string in YAML", "hello\n", CodeMalformed, "", "", "must be a JSON object"},
		{"empty document", "", CodeMalformed, "", "", "empty"},
		{"comment-only YAML", "# nothing\n", CodeMalformed, "", "", "empty"},
		{"YAML integer key", "planId: p\nplanVersion: v\nsteps:\n  - id: a\n    activity: echo\n    input: {1: x}\n", CodeMalformed, "", "steps[0].input", "not a string"},
		{"YAML boolean key", "planId: p\nplanVersion: v\ntrue: x\nsteps: []\n", CodeMalformed, "", "", "a bool, not a string"},
		{"YAML 1.1 boolean word is a string", "planId: p\nplanVersion: v\non: x\nsteps: []\n", CodeUnknownField, "", "on", `unknown field "on"`},
		{"number for a string", `{"planId":7,"planVersion":"1",` + steps + `}`, CodeMalformed, "", "planId", "must be a string"},
		{"unquoted YAML version", "planId: p\nplanVersion: 1.0\nsteps: [{id: a, activity: echo}]\n", CodeMalformed, "", "planVersion", "must be a string"},
		{"string for an integer", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","retry":{"maxAttempts":"3"}}]}`, CodeMalformed, "a", "retry.maxAttempts", "integer"},
		{"fraction for an integer", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","retry":{"maxAttempts":2.5}}]}`, CodeMalformed, "a", "retry.maxAttempts", "integer"},
		{"number for a duration", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","timeout":30}]}`, CodeMalformed, "a", "timeout", "duration"},
		{"bad duration", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","timeout":"soon"}]}`, CodeMalformed, "a", "timeout", "duration"},
		{"negative duration", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","timeout":"-1s"}]}`, CodeMalformed, "a", "timeout", "negative"},
		{"object for an array", `{"planId":"p","planVersion":"1","steps":{"id":"a"}}`, CodeMalformed, "", "steps", "must be an array"},
		{"string for an array", `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","dependsOn":"b"}]}`, CodeMalformed, "a", "dependsOn", "must be an array"},
		{"null array element", `{"planId":"p","planVersion":"1","steps":[null]}`, CodeMalformed, "", "steps[0]", "not null"},
		{"newer schema version", `{"schemaVersion":6,"planId":"p","planVersion":"1","triggers":[],` + steps + `}`, CodeUnsupportedSchemaVersion, "", "schemaVersion", "upgrade"},
		{"schema version as a string", `{"schemaVersion":"1","planId":"p","planVersion":"1",` + steps + `}`, CodeMalformed, "", "schemaVersion", "integer"},
		{"negative schema version", `{"schemaVersion":-1,"planId":"p","planVersion":"1",` + steps + `}`, CodeUnsupportedSchemaVersion, "", "schemaVersion", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse([]byte(tt.doc), Limits{})
			require.Nil(t, p)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			got := ve.Problems[0]
			require.Equal(t, tt.code, got.Code, "%v", ve.Problems)
			require.Equal(t, tt.step, got.StepID, "%v", got)
			require.Equal(t, tt.field, got.Field, "%v", got)
			require.Contains(t, got.Message, tt.msg)
			require.Contains(t, err.Error(), got.Message)
		})
	}
}

func TestParseStrictCollectsProblems(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"planId":"p","Owner":1,"planVersion":"1","steps":[{"id":"a","activity":"echo","Queue":"q","timeout":5}]}`), Limits{})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	fields := make([]string, 0, len(ve.Problems))
	for _, p := range ve.Problems {
		fields = append(fields, p.Field)
	}
	require.Equal(t, []string{"Owner", "Queue", "timeout"}, fields, "in document order")
	require.Equal(t, "a", ve.Problems[1].StepID)
	require.Contains(t, err.Error(), "plan: 3 problems: ")
}

func TestParseNeverEchoesSecretKeys(t *testing.T) {
	t.Parallel()
	const key = "AKIAIOSFODNN7EXAMPLE"
	_, err := Parse([]byte(`{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","input":{"`+key+`":1,"`+key+`":2}}]}`), Limits{})
	requireOnly(t, err, CodeDuplicateKey)
	require.NotContains(t, err.Error(), key)
}

func TestLimitsDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, DefaultLimits(), Limits{}.withDefaults())
	require.Equal(t, DefaultLimits(), Limits{MaxPlanBytes: -1, MaxSteps: -1, MaxStepInputBytes: -1, MaxDepth: -1, MaxIDBytes: -1, MaxExpressionBytes: -1,
		MaxInputSchemaBytes: -1, MaxRunDepth: -1}.withDefaults())
	require.Equal(t, Limits{MaxPlanBytes: 1 << 20, MaxSteps: 1000, MaxStepInputBytes: 64 << 10, MaxDepth: 64, MaxIDBytes: 128, MaxExpressionBytes: 4 << 10,
		MaxInputSchemaBytes: 64 << 10, MaxRunDepth: 8}, DefaultLimits())
}

// padTo pads a JSON document with spaces to exactly n bytes.
func padTo(t *testing.T, doc string, n int) []byte {
	t.Helper()
	require.LessOrEqual(t, len(doc), n)
	return []byte(doc + strings.Repeat(" ", n-len(doc)))
}

func TestParseLimitPlanBytes(t *testing.T) {
	t.Parallel()
	doc := `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`
	_, err := Parse(padTo(t, doc, DefaultMaxPlanBytes), Limits{})
	require.NoError(t, err, "exactly at the default limit")
	_, err = Parse(padTo(t, doc, DefaultMaxPlanBytes+1), Limits{})
	requireOnly(t, err, CodePlanTooLarge)

	_, err = Parse(padTo(t, doc, 400), Limits{MaxPlanBytes: 400})
	require.NoError(t, err)
	_, err = Parse(padTo(t, "not even a plan", 401), Limits{MaxPlanBytes: 400})
	require.Contains(t, requireOnly(t, err, CodePlanTooLarge).Message, "the document is 401 bytes") // before parsing

	// The limit also holds for the plan as persisted, defaults filled in.
	_, err = Parse([]byte(doc), Limits{MaxPlanBytes: len(doc)})
	require.Contains(t, requireOnly(t, err, CodePlanTooLarge).Message, "the plan encodes to")
}

// nested returns a step input nested n objects deep: {"a":{"a":…{}}}.
func nested(n int) string {
	return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
}

func TestParseLimitDepth(t *testing.T) {
	t.Parallel()
	// plan (1) > steps (2) > step (3) > input (4…)
	doc := func(inputDepth int) string {
		return `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","input":` + nested(inputDepth) + `}]}`
	}
	_, err := Parse([]byte(doc(DefaultMaxDepth-3)), Limits{})
	require.NoError(t, err, "exactly at the default limit")
	_, err = Parse([]byte(doc(DefaultMaxDepth-2)), Limits{})
	requireOnly(t, err, CodeTooDeep)

	_, err = Parse([]byte(doc(2)), Limits{MaxDepth: 5})
	require.NoError(t, err)
	_, err = Parse([]byte(doc(3)), Limits{MaxDepth: 5})
	require.Equal(t, "input.a.a", requireProblem(t, err, CodeTooDeep, "a").Field)

	yamlDoc := func(inputDepth int) string {
		return "planId: p\nplanVersion: v\nsteps:\n  - id: a\n    activity: echo\n    input: " + nested(inputDepth) + "\n"
	}
	_, err = Parse([]byte(yamlDoc(2)), Limits{MaxDepth: 5})
	require.NoError(t, err)
	_, err = Parse([]byte(yamlDoc(3)), Limits{MaxDepth: 5})
	requireOnly(t, err, CodeTooDeep)
}

func TestParseDeepYAMLArray(t *testing.T) {
	t.Parallel()
	doc := "planId: p\nplanVersion: v\nsteps: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n"
	_, err := Parse([]byte(doc), Limits{})
	require.Error(t, err)
}

func TestParseLimitSteps(t *testing.T) {
	t.Parallel()
	doc := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"planId":"p","planVersion":"1","steps":[`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"id":"s` + strings.Repeat("x", i) + `","activity":"echo"}`)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	_, err := Parse(doc(3), Limits{MaxSteps: 3})
	require.NoError(t, err)
	_, err = Parse(doc(4), Limits{MaxSteps: 3})
	requireProblem(t, err, CodeTooManySteps, "")
}

func TestParseLimitStepInput(t *testing.T) {
	t.Parallel()
	doc := func(inputBytes int) []byte {
		input := `"` + strings.Repeat("x", inputBytes-2) + `"`
		return []byte(`{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","input":` + input + `}]}`)
	}
	_, err := Parse(doc(DefaultMaxStepInputBytes), Limits{})
	require.NoError(t, err, "exactly at the default limit")
	_, err = Parse(doc(DefaultMaxStepInputBytes+1), Limits{})
	requireProblem(t, err, CodeInputTooLarge, "a")

	_, err = Parse(doc(10), Limits{MaxStepInputBytes: 10})
	require.NoError(t, err)
	_, err = Parse(doc(11), Limits{MaxStepInputBytes: 10})
	requireProblem(t, err, CodeInputTooLarge, "a")
}

func TestParseLimitIDBytes(t *testing.T) {
	t.Parallel()
	doc := func(id string) []byte {
		return []byte(`{"planId":"` + id + `","planVersion":"1","steps":[{"id":"` + id + `","activity":"echo"}]}`)
	}
	_, err := Parse(doc(strings.Repeat("x", DefaultMaxIDBytes)), Limits{})
	require.NoError(t, err, "exactly at the default limit")
	long := strings.Repeat("x", DefaultMaxIDBytes+1)
	_, err = Parse(doc(long), Limits{})
	requireProblem(t, err, CodeInvalidID, long)
	require.Equal(t, "planId", requireProblem(t, err, CodeInvalidID, "").Field)

	_, err = Parse(doc("é"+strings.Repeat("x", 8)), Limits{MaxIDBytes: 10}) // 10 bytes
	require.NoError(t, err)
	_, err = Parse(doc("é"+strings.Repeat("x", 9)), Limits{MaxIDBytes: 10})
	requireProblem(t, err, CodeInvalidID, "é"+strings.Repeat("x", 9))
}
