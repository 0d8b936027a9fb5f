package decide

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
)

// The start a worker reports is the attempt's start, in its StepStarted
// and the state, even when the worker reports it only with the outcome;
// a worker clock off by more than the attempt's time in flight is kept
// between the scheduling and the round.
func TestReportedStartIsTheAttemptsStart(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		reported time.Time
		want     func(scheduled, now time.Time) time.Time
	}{
		"within":         {t0.Add(300 * time.Millisecond), func(_, _ time.Time) time.Time { return t0.Add(300 * time.Millisecond) }},
		"none":           {time.Time{}, func(_, now time.Time) time.Time { return now }},
		"before the run": {t0.Add(-time.Hour), func(scheduled, _ time.Time) time.Time { return scheduled }},
		"in the future":  {t0.Add(time.Hour), func(_, now time.Time) time.Time { return now }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, act("a"))
			b.decide(approve())
			scheduled := b.s.Steps["a"].ScheduledAt
			now := t0.Add(time.Second)
			d := b.decide(ResultCompleted{StepID: "a", LogicalAttempt: 1, EngineAttemptID: "1", WorkerID: "w1",
				Output: json.RawMessage(`{}`), StartedAt: c.reported, Now: now})
			require.Equal(t, []string{"StepStarted a 1", "StepCompleted a 1", "RunCompleted"}, descs(d.Events))
			want := c.want(scheduled, now)
			require.Equal(t, want, b.s.Steps["a"].StartedAt)
			data := d.Events[0].Data.(events.StepStartedData)
			if c.reported.IsZero() {
				require.True(t, data.StartedAt.IsZero(), "no start reported, none recorded")
			} else {
				require.Equal(t, want, data.StartedAt)
			}
			snap, err := events.Project(testRun, b.log)
			require.NoError(t, err)
			if !c.reported.IsZero() {
				require.Equal(t, want, *snap.Steps[0].StartedAt, "the snapshot shows the reported start")
				details, err := events.StepDetails(b.log)
				require.NoError(t, err)
				require.Equal(t, want, *details["a"].Attempts[0].StartedAt, "so does the step's detail")
			}
		})
	}
}
