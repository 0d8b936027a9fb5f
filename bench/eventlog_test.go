package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// runsPerWriter is how many runs each writer spreads its appends over in
// the many-runs figures.
const runsPerWriter = 16

// BenchmarkEventAppend measures events appended per second, each append a
// transaction of its own (one round trip, committed), to one run and to
// many runs, from 1 and 8 writers. With one run every append queues on the
// run head's row lock, held through the commit's fsync, so 8 writers show
// the cost of that serialisation; with many runs each writer has runs of
// its own and the writers only share the database.
func BenchmarkEventAppend(b *testing.B) {
	for _, runs := range []string{"one", "many"} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("runs=%s/writers=%d", runs, writers), func(b *testing.B) {
				benchAppend(b, runs == "one", writers)
			})
		}
	}
}

func benchAppend(b *testing.B, oneRun bool, writers int) {
	ctx := context.Background()
	pool := weftest.NewDB(b).Pool
	store := eventlog.New(pool)
	runIDs := make([]string, writers*runsPerWriter)
	for i := range runIDs {
		runIDs[i] = events.NewRunID()
		if oneRun {
			runIDs[i] = runIDs[0]
		}
	}
	b.ResetTimer()
	elapsed := parallel(b, writers, b.N, func(w, i int) error {
		ev, err := events.New(events.Spec{
			RunID: runIDs[w*runsPerWriter+i%runsPerWriter], StepID: fmt.Sprintf("s%d", i),
			LogicalAttemptID: "1", Type: events.StepStarted, PlanVersion: "1",
		})
		if err != nil {
			return err
		}
		_, err = eventlogtest.AppendLog(ctx, store, pool, nil, ev)
		return err
	})
	report(b, b.N, elapsed, "events/s", nil)
}
