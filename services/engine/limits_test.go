package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/engine"
)

// The sweep's timings and the rounds' linger are refused outside their
// limits, each with its field and limits named; zero means the default and
// the limits are valid.
func TestSweepTimingLimits(t *testing.T) {
	t.Parallel()
	require.NoError(t, engine.Config{}.Validate())
	require.NoError(t, engine.Config{SweepInterval: engine.MinSweepInterval, StallAfter: engine.MaxStallAfter,
		TaskGrace: engine.MinTaskGrace, RoundLinger: engine.MaxRoundLinger}.Validate())
	require.NoError(t, engine.Config{RoundLinger: -1}.Validate(), "a negative linger turns it off")
	for _, tc := range []struct {
		cfg   engine.Config
		field string
	}{
		{engine.Config{SweepInterval: engine.MinSweepInterval - 1}, "SweepInterval"},
		{engine.Config{SweepInterval: engine.MaxSweepInterval + 1}, "SweepInterval"},
		{engine.Config{StallAfter: -time.Second}, "StallAfter"},
		{engine.Config{StallAfter: engine.MaxStallAfter + 1}, "StallAfter"},
		{engine.Config{TaskGrace: time.Millisecond}, "TaskGrace"},
		{engine.Config{TaskGrace: engine.MaxTaskGrace + time.Second}, "TaskGrace"},
		{engine.Config{RoundLinger: engine.MaxRoundLinger + 1}, "RoundLinger"},
	} {
		err := tc.cfg.Validate()
		var le *engine.LimitError
		require.ErrorAs(t, err, &le, "%+v", tc.cfg)
		require.Equal(t, tc.field, le.Field)
		require.Contains(t, err.Error(), tc.field)
		require.Contains(t, err.Error(), "at least "+le.Min.String())
	}
	err := engine.Config{StallAfter: time.Millisecond, TaskGrace: -1}.Validate()
	var le *engine.LimitError
	require.ErrorAs(t, err, &le)
	require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 2, "every field out of its limits is reported")

	s := newStack(t)
	_, err = engine.New(s.db.Pool, s.nats.Conn(t), engine.Config{SweepInterval: time.Nanosecond})
	require.ErrorAs(t, err, &le, "New validates")
}
