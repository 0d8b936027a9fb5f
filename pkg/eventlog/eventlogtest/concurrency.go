package eventlogtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
)

const writers = 32

// outcomes collects every append result by (run, event name), safely from
// many goroutines.
type outcomes struct {
	mu   sync.Mutex
	byID map[[2]string][]eventlog.AppendResult
	errs []error
}

func (o *outcomes) add(runID, name string, res eventlog.AppendResult, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.errs = append(o.errs, fmt.Errorf("%s/%s: %w", runID, name, err))
		return
	}
	if o.byID == nil {
		o.byID = map[[2]string][]eventlog.AppendResult{}
	}
	o.byID[[2]string{runID, name}] = append(o.byID[[2]string{runID, name}], res)
}

// check verifies the contract over everything appended to runID: every name
// was persisted exactly once, every duplicate got that event's runSeq, and
// the run is exactly 1..len(names) with each name once.
func (o *outcomes) check(t *testing.T, l Log, runID string, names []string) {
	t.Helper()
	require.Empty(t, o.errs)
	seqOf := map[int64]string{}
	for _, name := range names {
		results := o.byID[[2]string{runID, name}]
		require.NotEmpty(t, results, name)
		persisted := 0
		for _, r := range results {
			require.Equal(t, results[0].RunSeq, r.RunSeq, "every append of %s got the same runSeq", name)
			require.NotEqual(t, r.Persisted, r.Idempotent)
			if r.Persisted {
				persisted++
			}
		}
		require.Equal(t, 1, persisted, "%s persisted exactly once", name)
		seqOf[results[0].RunSeq] = name
	}
	evs := requireRun(t, l, runID, len(names))
	for _, ev := range evs {
		require.Equal(t, key(runID+"|"+seqOf[ev.RunSeq]), ev.IdempotencyKey, "runSeq %d", ev.RunSeq)
	}
}

// testConcurrentAppendsOneRun: 32 writers on one run. Every writer appends 4
// hot names all writers append at once, then 8 names of its own interleaved
// with the 8 of its neighbour, so every name is raced by at least 2 writers.
func testConcurrentAppendsOneRun(t *testing.T, l Log) {
	ctx := t.Context()
	runID := events.NewRunID()
	const own = 8
	var names []string
	for i := range 4 {
		names = append(names, fmt.Sprint("hot", i))
	}
	for g := range writers {
		for j := range own {
			names = append(names, fmt.Sprintf("w%d-%d", g, j))
		}
	}
	var out outcomes
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			<-start
			plan := []string{"hot0", "hot1", "hot2", "hot3"}
			for j := range own {
				plan = append(plan, fmt.Sprintf("w%d-%d", g, j), fmt.Sprintf("w%d-%d", (g+1)%writers, j))
			}
			for _, name := range plan {
				out.appendNamed(ctx, l, runID, name)
			}
		})
	}
	close(start)
	wg.Wait()
	out.check(t, l, runID, names)
}

// testConcurrentAppendsManyRuns: 32 writers over 8 runs, each run getting 40
// names, each name raced by 10 writers. Even writers append one event at a
// time, odd writers one transaction per run with a batch of 10 events.
func testConcurrentAppendsManyRuns(t *testing.T, l Log) {
	ctx := t.Context()
	const runs, perRun, span = 8, 40, 10
	runIDs := make([]string, runs)
	for i := range runIDs {
		runIDs[i] = events.NewRunID()
	}
	var out outcomes
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			<-start
			for r := range runs {
				runID := runIDs[(g+r)%runs]
				names := make([]string, span)
				for j := range names {
					names[j] = fmt.Sprint("n", (g+j)%perRun)
				}
				if g%2 == 0 {
					for _, name := range names {
						out.appendNamed(ctx, l, runID, name)
					}
					continue
				}
				batchAppend(ctx, l, runID, names, &out)
			}
		})
	}
	close(start)
	wg.Wait()
	names := make([]string, perRun)
	for i := range names {
		names[i] = fmt.Sprint("n", i)
	}
	for _, runID := range runIDs {
		out.check(t, l, runID, names)
	}
}

// appendNamed appends the event named name to runID in its own
// transaction and records the outcome.
func (o *outcomes) appendNamed(ctx context.Context, l Log, runID, name string) {
	ev, err := newEvent(runID, name)
	var res eventlog.AppendResult
	if err == nil {
		res, err = l.appendOne(ctx, l.Pool, nil, ev)
	}
	o.add(runID, name, res, err)
}

// batchAppend appends names to runID as one batch in one transaction.
func batchAppend(ctx context.Context, l Log, runID string, names []string, out *outcomes) {
	res, err := batchAppendTx(ctx, l, runID, names)
	for i, name := range names {
		if err != nil {
			out.add(runID, name, eventlog.AppendResult{}, err)
			continue
		}
		out.add(runID, name, res[i], nil)
	}
}

func batchAppendTx(ctx context.Context, l Log, runID string, names []string) ([]eventlog.AppendResult, error) {
	evs := make([]events.Event, len(names))
	for i, name := range names {
		ev, err := newEvent(runID, name)
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	var res []eventlog.AppendResult
	err := pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		var err error
		res, err = l.append(ctx, tx, nil, evs...)
		return err
	})
	return res, err
}
