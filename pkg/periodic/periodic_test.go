package periodic_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftrun/weft/pkg/periodic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSleepWaitsD(t *testing.T) {
	t.Parallel()
	require.NoError(t, periodic.Sleep(context.Background(), time.Millisecond))
	require.NoError(t, periodic.Sleep(context.Background(), 0))
	require.NoError(t, periodic.Sleep(context.Background(), -time.Hour))
}

func TestSleepReturnsWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	require.ErrorIs(t, periodic.Sleep(ctx, time.Hour), context.Canceled)

	dctx, dcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer dcancel()
	require.ErrorIs(t, periodic.Sleep(dctx, time.Hour), context.DeadlineExceeded)
}

func TestSleepEndedContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, periodic.Sleep(ctx, 0), context.Canceled)
	require.ErrorIs(t, periodic.Sleep(ctx, time.Nanosecond), context.Canceled)
}

// logged returns a Loop logging into a buffer, and the buffer.
func logged(interval time.Duration, immediate bool) (periodic.Loop, *bytes.Buffer) {
	var buf bytes.Buffer
	return periodic.Loop{
		Interval:  interval,
		Immediate: immediate,
		Logger:    slog.New(slog.NewTextHandler(&buf, nil)),
		Failed:    "poll failed",
	}, &buf
}

func TestLoopCallsRepeatedlyAndLogsErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loop, buf := logged(time.Millisecond, false)
	calls := 0
	loop.Run(ctx, func(ctx context.Context) error {
		calls++
		if calls == 3 {
			cancel() // its error, and any later call's, is not logged
		}
		return errors.New("boom")
	})
	require.GreaterOrEqual(t, calls, 3, "the loop goes on after an error")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, buf.String())
	for _, l := range lines {
		require.Contains(t, l, "level=WARN")
		require.Contains(t, l, `msg="poll failed"`)
		require.Contains(t, l, "err=boom")
	}
}

func TestLoopReturnsWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loop, buf := logged(time.Hour, true)
	calls := 0
	loop.Run(ctx, func(ctx context.Context) error {
		calls++
		cancel()
		return nil
	})
	require.Equal(t, 1, calls)
	require.Empty(t, buf.String())
}

func TestLoopFirstCall(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, immediate := range []bool{false, true} {
		loop, _ := logged(time.Hour, immediate)
		calls := 0
		loop.Run(ended, func(context.Context) error { calls++; return nil })
		if immediate {
			require.Equal(t, 1, calls, "an Immediate loop calls once as it starts")
		} else {
			require.Zero(t, calls, "the first call waits one Interval")
		}
	}
}

func TestLoopWithoutLogger(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	periodic.Loop{Interval: time.Millisecond}.Run(ctx, func(context.Context) error {
		calls++
		if calls == 2 {
			cancel()
		}
		return errors.New("boom")
	})
	require.GreaterOrEqual(t, calls, 2)
}
