package demo_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/activity-worker/internal/demo"
)

func TestFailNTimesCountsLogicalAttempts(t *testing.T) {
	t.Parallel()
	input := json.RawMessage(`{"times": 2, "key": "k"}`)
	for _, tt := range []struct {
		logical, engine string
		fails           bool
	}{
		{"1", "1", true}, {"1", "5", true}, {"2", "1", true}, {"3", "1", false}, {"3", "2", false}, {"10", "1", false},
	} {
		out, err := demo.FailNTimes(context.Background(), worker.Input{JSON: input, Activity: "fail-n-times",
			LogicalAttemptID: tt.logical, EngineAttemptID: tt.engine})
		if !tt.fails {
			require.NoError(t, err, tt)
			require.JSONEq(t, `{"key":"k","logicalAttemptId":"`+tt.logical+`"}`, string(out.JSON))
			continue
		}
		var e *worker.Error
		require.ErrorAs(t, err, &e, tt)
		require.Equal(t, demo.CodePlannedFailure, e.Code)
		require.True(t, e.Retryable)
	}
}

func TestInvalidInputIsNotRetryable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		fn    worker.ActivityFunc
		input string
	}{
		{demo.Sleep, ``}, {demo.Sleep, `{"ms": -1}`}, {demo.Sleep, `{"ms": "1"}`}, {demo.Sleep, `{}`},
		{demo.Sleep, `not json`}, {demo.FailNTimes, `{"times": 1, "extra": true}`},
	} {
		_, err := tt.fn(context.Background(), worker.Input{JSON: json.RawMessage(tt.input), LogicalAttemptID: "1"})
		var e *worker.Error
		require.ErrorAs(t, err, &e, tt.input)
		require.Equal(t, demo.CodeInvalidInput, e.Code, tt.input)
		require.False(t, e.Retryable, tt.input)
	}
}

func TestSleepHonoursItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := demo.Sleep(ctx, worker.Input{JSON: json.RawMessage(`{"ms": 3600000}`)})
	require.ErrorIs(t, err, context.Canceled)
}

func TestEcho(t *testing.T) {
	t.Parallel()
	out, err := demo.Echo(context.Background(), worker.Input{JSON: json.RawMessage(`[1,2]`)})
	require.NoError(t, err)
	require.JSONEq(t, `[1,2]`, string(out.JSON))
}
