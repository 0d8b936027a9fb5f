package soak

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
)

func TestParseFaults(t *testing.T) {
	t.Parallel()
	all, err := parseFaults("")
	require.NoError(t, err)
	require.Equal(t, faultKinds, all)
	none, err := parseFaults("none")
	require.NoError(t, err)
	require.Empty(t, none)
	got, err := parseFaults("kill,nats")
	require.NoError(t, err)
	require.Equal(t, []string{"kill-gateway", "kill-engine", "kill-relay", "kill-worker", "kill-projector", "nats"}, got)
	_, err = parseFaults("nats,flood")
	require.ErrorContains(t, err, `unknown fault "flood"`)
}

// finalize resends only what the log shows missing: RESUME after a last
// PAUSE, "go" to a wait run without one; nothing after PAUSE then RESUME
// (a run stuck PAUSED then is a defect for the checker, not for finalize).
func TestNeededSignals(t *testing.T) {
	t.Parallel()
	require.Equal(t, []need{{"r", "go", "go-final-r"}}, neededSignals("r", kindWait, nil))
	require.Empty(t, neededSignals("r", kindWait, []string{"go"}))
	require.Equal(t, []need{{"r", "RESUME", "resume-final-r-1"}}, neededSignals("r", kindPause, []string{"PAUSE"}))
	require.Empty(t, neededSignals("r", kindPause, []string{"PAUSE", "RESUME"}))
	require.Equal(t, []need{{"r", "RESUME", "resume-final-r-2"}},
		neededSignals("r", kindPause, []string{"PAUSE", "RESUME", "PAUSE"}))
}

func TestSameSnapshotIgnoresTimesOnly(t *testing.T) {
	t.Parallel()
	t1, t2 := time.Unix(1, 0), time.Unix(2, 0)
	a := events.RunSnapshot{RunID: "r", Status: events.RunStatusCompleted, LastEventSeq: 9, StartedAt: &t1,
		Steps: []events.StepSnapshot{{StepID: "a", Status: events.StepStatusSuccess, LogicalAttemptID: "1", StartedAt: &t1}}}
	b := a
	b.StartedAt = &t2
	b.Steps = []events.StepSnapshot{a.Steps[0]}
	b.Steps[0].StartedAt = &t2
	diff, err := sameSnapshot(a, b)
	require.NoError(t, err)
	require.Empty(t, diff)
	b.Steps[0].Status = events.StepStatusRunning
	diff, err = sameSnapshot(a, b)
	require.NoError(t, err)
	require.Contains(t, diff, "RUNNING")
}

// Two "activity" ends of one keyed attempt are two executions; a start
// without an end counts only in an instance that was SIGKILLed, as maybe.
func TestReadInstance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "worker-1.1.log")
	line := func(msg, delivery, settled string) string {
		return `{"time":"2026-11-27T05:44:57.4Z","level":"INFO","msg":"` + msg + `","run_id":"r","step_id":"pay",` +
			`"logical_attempt_id":"1","engine_attempt_id":"` + delivery + `","settled_by":"` + settled + `"}` + "\n"
	}
	require.NoError(t, os.WriteFile(log, []byte(line(msgAttemptStarted, "1", "")+"not json\n"+
		line(msgAttemptEnded, "1", "activity")+line(msgAttemptStarted, "2", "")+line(msgAttemptEnded, "2", "memory")+
		line(msgAttemptStarted, "3", "")), 0o600))
	out := map[attemptKey][]execution{}
	n, err := readInstance(instance{log: log}, "worker-1.1", out)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Len(t, out[attemptKey{"r", "pay", "1"}], 1, "the memory settlement did not run; delivery 3 was not killed")

	out = map[attemptKey][]execution{}
	_, err = readInstance(instance{log: log, killed: time.Now()}, "worker-1.1", out)
	require.NoError(t, err)
	xs := out[attemptKey{"r", "pay", "1"}]
	require.Len(t, xs, 2)
	require.True(t, xs[1].maybe)
	require.Equal(t, "3", xs[1].delivery)
}
