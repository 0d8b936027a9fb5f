package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// progressView is a run of three steps (a, a waitSignal gate, c) at seq.
func progressView(seq int64, status events.RunStatus, steps ...events.StepSnapshot) *api.RunView {
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &api.RunView{
		RunSnapshot: events.RunSnapshot{RunID: "r", Status: status, LastEventSeq: seq, Steps: steps, StartedAt: &started},
		Plan: api.RunPlan{Steps: []api.PlanStep{
			{ID: "a", Activity: "echo"}, {ID: "gate", Kind: "waitSignal", Signal: "approve"}, {ID: "c", Activity: "echo"},
		}},
	}
}

// Away from a terminal, progress prints one line per change of state, not
// per view, with the bar, the steps in flight and the elapsed time.
func TestProgressPlainLines(t *testing.T) {
	t.Parallel()
	var out weftest.Buffer
	p := newProgress(&out, "")
	require.False(t, p.live)
	now := time.Date(2026, 1, 2, 3, 4, 17, 0, time.UTC)
	p.now = func() time.Time { return now }

	p.show(progressView(2, events.RunStatusRunning, events.StepSnapshot{StepID: "a", Status: events.StepStatusRunning}))
	p.show(progressView(3, events.RunStatusRunning, events.StepSnapshot{StepID: "a", Status: events.StepStatusRunning}))
	p.show(progressView(5, events.RunStatusRunning,
		events.StepSnapshot{StepID: "a", Status: events.StepStatusSuccess},
		events.StepSnapshot{StepID: "gate", Status: events.StepStatusRunning}))
	p.show(progressView(6, events.RunStatusRunning,
		events.StepSnapshot{StepID: "a", Status: events.StepStatusPending, Error: &events.StepError{Code: "X"}}))
	now = now.Add(1234 * time.Millisecond)
	ended := progressView(7, events.RunStatusCancelled, events.StepSnapshot{StepID: "a", Status: events.StepStatusRunning})
	ms := int64(3456)
	ended.TotalDurationMs = &ms
	p.show(ended)
	p.finish()

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Equal(t, []string{
		"    12s  [--------------------] 0/3 RUNNING  running: a",
		"    12s  [######--------------] 1/3 RUNNING  running: gate (waits for signal approve)",
		"    12s  [--------------------] 0/3 RUNNING  retry pending: a",
		"    12s  [--------------------] 0/3 CANCELLED",
	}, lines, "an ended run has nothing in flight; the elapsed time never goes back, though the run's recorded duration is shorter")
}

// A skipped step is not done: a failed run counts its steps by outcome.
func TestProgressCountsByOutcome(t *testing.T) {
	t.Parallel()
	v := progressView(9, events.RunStatusFailed,
		events.StepSnapshot{StepID: "a", Status: events.StepStatusSuccess},
		events.StepSnapshot{StepID: "gate", Status: events.StepStatusFailed},
		events.StepSnapshot{StepID: "c", Status: events.StepStatusSkipped})
	require.Equal(t, "[######--------------] 1/3 FAILED (1 failed, 1 skipped)", progressState(v))
}

// A finished run's elapsed time is its total duration.
func TestProgressElapsedOfEndedRun(t *testing.T) {
	t.Parallel()
	ms := int64(2500)
	v := progressView(9, events.RunStatusCompleted)
	v.TotalDurationMs = &ms
	require.Equal(t, 2500*time.Millisecond, runElapsed(v, time.Now()))
	v.TotalDurationMs, v.StartedAt = nil, nil
	require.Equal(t, time.Duration(0), runElapsed(v, time.Now()), "no start, no approval time: zero")
}

func TestOutcomeExitCodes(t *testing.T) {
	t.Parallel()
	for status, code := range map[events.RunStatus]int{
		events.RunStatusCompleted: ExitOK,
		events.RunStatusFailed:    ExitFailed,
		events.RunStatusCancelled: ExitCancelled,
		events.RunStatusRunning:   ExitError,
	} {
		require.Equal(t, code, ExitCode(outcome(progressView(1, status))), "%s", status)
	}
	require.Equal(t, ExitError, ExitCode(errors.New("any")))
	require.Equal(t, ExitTimeout, ExitCode(errors.Join(errors.New("x"), &codeError{code: ExitTimeout, err: errors.New("late")})))
}

// Flags may come before, between or after the positional arguments; "--"
// makes the rest positional.
func TestParseArgsAnyOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		pos  []string
		out  string
	}{
		{[]string{"id", "-o", "json"}, []string{"id"}, "json"},
		{[]string{"-o", "json", "id"}, []string{"id"}, "json"},
		{[]string{"id", "--output=json", "name"}, []string{"id", "name"}, "json"},
		{[]string{"id", "--", "-o", "x"}, []string{"id", "-o", "x"}, "text"},
		{nil, nil, "text"},
	} {
		f := newFlags("t", testEnv(nil))
		conn := addConnFlags(f)
		pos, err := f.parseArgs(tc.args)
		require.NoError(t, err, "%q", tc.args)
		require.Equal(t, tc.pos, pos, "%q", tc.args)
		require.Equal(t, tc.out, *conn.output, "%q", tc.args)
	}
	f := newFlags("t", testEnv(nil))
	_, err := f.parseArgs([]string{"id", "--nope"})
	require.ErrorContains(t, err, "unknown flag --nope")
}

// On a terminal, progress redraws one line in place at every view, so the
// elapsed time advances, and ends it with a newline.
func TestProgressLiveRedraws(t *testing.T) {
	t.Parallel()
	var out weftest.Buffer
	p := &progress{w: &out, live: true, width: 40, now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC) }}
	v := progressView(2, events.RunStatusRunning, events.StepSnapshot{StepID: "a", Status: events.StepStatusRunning})
	p.show(v)
	p.show(v)
	p.finish()
	line := "\r1.0s  [--------------------] 0/3 RUNNI…\x1b[K"
	require.Equal(t, line+line+"\n", out.String(), "redrawn in place, cut to the terminal's width")
}

// A progress line's elapsed time reads in seconds, a tenth at a time
// under ten seconds, as docs/cli.md shows it.
func TestElapsedText(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{0: "0.0s", 100 * time.Millisecond: "0.1s", 2 * time.Second: "2.0s",
		9900 * time.Millisecond: "9.9s", 12 * time.Second: "12s", 65 * time.Second: "1m5s"} {
		require.Equal(t, want, elapsedText(d), "%v", d)
	}
}
