package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine"
)

// An output a jsonb column cannot hold (a number past numeric's range, the
// escape \u0000, bytes that are not UTF-8) fails its attempt as
// INVALID_OUTPUT, for good. The engine never tries to write it, so the
// round that reads it commits, and neither its run nor the runs sharing
// the round are wedged by a write Postgres refuses (issue #36 finding 4).
func TestOutputJSONBCannotHoldFailsTheAttempt(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	bad := map[string]json.RawMessage{
		"huge":    json.RawMessage(`{"n":1e999999}`),
		"tiny":    json.RawMessage(`{"n":1e-999999}`),
		"nul":     json.RawMessage(`{"s":"a\u0000b"}`),
		"notutf8": json.RawMessage("{\"s\":\"\xff\xfe\"}"),
		"keynul":  json.RawMessage(`{"\u0000":1}`),
		"deep":    nested(engine.DefaultMaxOutputDepth + 1),
	}
	rawWorker(t, s.js, "default", func(tk task.Task) task.Result {
		r := task.NewResult(tk, task.Completed, "", "raw")
		r.Output = json.RawMessage(`{"ok":1e300}`) // fits: numeric holds it
		if tk.StepID == "deepok" {
			r.Output = nested(engine.DefaultMaxOutputDepth)
		}
		if tk.StepID == "errnul" {
			r = task.NewResult(tk, task.Failed, "", "raw\x00")
			r.Error = &events.StepError{Code: "E\x00", Message: "a\x00b", Category: "USER"}
		}
		if out, ok := bad[tk.StepID]; ok {
			r.Output = out
		}
		return r
	})
	fine := s.start(t, parsePlan(t, `{"planId":"fine","planVersion":"1","steps":[{"id":"a","activity":"x"},{"id":"deepok","activity":"x"}]}`))
	runs := map[string]string{}
	errnul := s.start(t, parsePlan(t, `{"planId":"e","planVersion":"1","steps":[{"id":"errnul","activity":"x"}]}`))
	for step := range bad {
		runs[step] = s.start(t, parsePlan(t, `{"planId":"bad","planVersion":"1","steps":[{"id":"`+step+`","activity":"x"}]}`))
	}
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, fine)))
	// A failure's strings holding U+0000 are recorded with U+FFFD instead.
	var nul events.StepFailedData
	for _, ev := range s.waitTerminal(t, errnul) {
		if ev.EventType == events.StepFailed {
			require.NoError(t, ev.Data(&nul))
		}
	}
	require.Equal(t, "a\uFFFDb", nul.Error.Message)
	for step, runID := range runs {
		evs := s.waitTerminal(t, runID)
		require.Equal(t, events.RunFailed, terminal(evs), step)
		var failure events.StepFailedData
		for _, ev := range evs {
			require.NotEqual(t, events.StepCompleted, ev.EventType, step)
			if ev.EventType == events.StepFailed {
				require.NoError(t, ev.Data(&failure))
			}
		}
		require.Equal(t, engine.CodeInvalidOutput, failure.Error.Code, step)
		require.False(t, failure.Error.Retryable, step)
	}
}

// nested is an output of depth arrays, one inside the other.
func nested(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// An expression whose value jsonb cannot hold (a string with U+0000, made
// with a CEL escape the plan's JSON does not show; a double past float64's
// range) fails its step, EXPRESSION_ERROR, instead of a StepScheduled or
// RunCompleted the log would refuse (issue #36 finding 4).
func TestExpressionValueJSONBCannotHoldFailsTheStep(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	for _, doc := range []string{
		`{"planId":"e","planVersion":"1","steps":[{"id":"a","activity":"x","input":{"s":"${{ 'a\\x00b' }}"}}]}`,
		`{"planId":"e","planVersion":"1","steps":[{"id":"a","activity":"x","input":{"s":"x ${{ 'a\\x00b' }} y"}}]}`,
		`{"planId":"e","planVersion":"1","steps":[{"id":"a","activity":"x","input":{"n":"${{ 1e308 * 10.0 }}"}}]}`,
		`{"planId":"e","planVersion":"1","steps":[{"id":"a","activity":"x","forEach":"['\\x00']","input":"${{ item }}"}]}`,
		`{"planId":"e","planVersion":"1","steps":[{"id":"a","activity":"x","input":{"k":"${{ {'\\x00': 1} }}"}}]}`,
		`{"planId":"e","planVersion":"1","output":"'\\x00'","steps":[{"id":"a","activity":"x"}]}`,
	} {
		runID := s.start(t, parsePlan(t, doc))
		evs := s.waitTerminal(t, runID)
		require.Equal(t, events.RunFailed, terminal(evs), doc)
	}
}
