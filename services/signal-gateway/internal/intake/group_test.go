package intake_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// Many signals at once, to several runs and each sent twice, share
// transactions: each is still accepted once, with one event, one outbox
// row and one record, and its repeat gets its canonical result.
func TestSignalsSentTogetherAreAcceptedOnceEach(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{MaxSignalsPerRunMinute: 1000})
	runs := make([]string, 8)
	for i := range runs {
		runs[i] = b.run(t)
	}
	const perRun = 8
	type answer struct {
		res intake.SignalResult
		err error
	}
	answers := make([][2]answer, len(runs)*perRun)
	var wg sync.WaitGroup
	for i := range answers {
		for k := range 2 {
			wg.Go(func() {
				res, err := b.signal(t, runs[i%len(runs)], "go", ptr(fmt.Sprint("s-", i)))
				answers[i][k] = answer{res, err}
			})
		}
	}
	wg.Wait()

	for i, pair := range answers {
		require.NoError(t, pair[0].err)
		require.NoError(t, pair[1].err)
		require.NotEqual(t, pair[0].res.Duplicate, pair[1].res.Duplicate, "signal %d: one accepted, one repeat", i)
		require.Equal(t, pair[0].res.AcceptedSignalResult, pair[1].res.AcceptedSignalResult)
	}
	for _, run := range runs {
		evs, outbox := b.accepted(t, run)
		require.Equal(t, perRun, evs)
		require.Equal(t, perRun, outbox)
		require.Equal(t, perRun, b.count(t, `SELECT count(*) FROM signal_acceptances WHERE run_id = $1`, run))
	}
}

// A caller that leaves while its signal waits to be decided gets the
// context's error; the others are decided.
func TestSignalCallerLeavingDoesNotFailOthers(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{MaxSignalsPerRunMinute: 1000})
	runID := b.run(t)
	stay := t.Context()
	leave, cancel := context.WithCancel(stay)
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range errs {
		ctx := stay
		if i%2 == 0 {
			ctx = leave
		}
		wg.Go(func() {
			_, errs[i] = b.in.SignalSend(ctx, operator, intake.Signal{RunID: runID, Name: "go", ID: ptr(fmt.Sprint("s-", i))})
		})
	}
	cancel()
	wg.Wait()
	for i, err := range errs {
		if i%2 == 1 {
			require.NoError(t, err, "signal %d", i)
		}
	}
}
