package bench

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/projector"
)

// rebuildRuns is how many completed three-step runs (projectorRunEvents
// events each) the rebuild benchmark's log holds.
const rebuildRuns = 2000

// BenchmarkProjectorRebuild measures `weft projector rebuild` (issue 16,
// defect 3): the log holds 2,000 completed three-step runs of 12 events
// and run_snapshots is empty (DELETE FROM run_snapshots); the clock runs
// over one Rebuild pass, which finds every run through run_heads and
// projects each from its log through the projector's resync path, 50 runs
// per transaction. runs/s is the figure; no projector runs beside it.
func BenchmarkProjectorRebuild(b *testing.B) {
	ctx := context.Background()
	db := weftest.NewDB(b)
	p, err := plan.Parse([]byte(linear3Plan), plan.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	log := eventlog.New(db.Pool)
	approver := runstart.Approver{Journal: journal.New(log)}
	v := validatedPlan(b, p)
	parallel(b, projectorWriters, rebuildRuns, func(_, _ int) error {
		return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			runID, err := approver.ApproveTx(ctx, tx, runstart.Request{Plan: v})
			if err != nil {
				return err
			}
			evs, err := completedRun(runID, p)
			if err != nil {
				return err
			}
			_, err = eventlogtest.AppendLog(ctx, log, tx, nil, evs...)
			return err
		})
	})
	r, err := projector.NewRebuilder(db.Pool, projector.Config{})
	if err != nil {
		b.Fatal(err)
	}
	var rebuilt int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := db.Pool.Exec(ctx, `DELETE FROM run_snapshots`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		st, err := r.Rebuild(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Rebuilt != rebuildRuns {
			b.Fatalf("rebuilt %d runs of %d", st.Rebuilt, rebuildRuns)
		}
		rebuilt += st.Rebuilt
	}
	b.ReportMetric(float64(rebuilt)/b.Elapsed().Seconds(), "runs/s")
	b.ReportMetric(float64(rebuilt*projectorRunEvents)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(0, "ns/op")
}
