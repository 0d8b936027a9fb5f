package round_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// bench is one run of a linear plan in a fresh database, driven round by
// round, with no bus: the rounds' tasks stay in the outbox.
type bench struct {
	t     *testing.T
	db    *weftest.DB
	log   *eventlog.Store
	runID string
	steps int
}

// newBench approves a run of a linear plan of n activity steps.
func newBench(t *testing.T, n int) *bench {
	t.Helper()
	b := &bench{t: t, db: weftest.NewDB(t), steps: n}
	b.log = eventlog.New(b.db.Pool)
	p := &plan.Plan{PlanID: "linear", PlanVersion: "1"}
	for i := range n {
		s := plan.Step{ID: b.stepID(i), Activity: "echo"}
		if i > 0 {
			s.DependsOn = []string{b.stepID(i - 1)}
		}
		p.Steps = append(p.Steps, s)
	}
	v, err := p.Validated(plan.Limits{})
	require.NoError(t, err)
	err = pgx.BeginFunc(t.Context(), b.db.Pool, func(tx pgx.Tx) error {
		var err error
		b.runID, err = runstart.Approver{Journal: journal.New(b.log)}.ApproveTx(t.Context(), tx, runstart.Request{Plan: v})
		return err
	})
	require.NoError(t, err)
	return b
}

func (b *bench) stepID(i int) string { return fmt.Sprintf("s%03d", i) }

// run runs one round of in on x and returns its outcome.
func (b *bench) run(x *round.Runner, in decide.Input) round.Outcome {
	b.t.Helper()
	out, err := x.Run(b.t.Context(), round.Round{RunID: b.runID, Input: in})
	require.NoError(b.t, err)
	return out
}

// start runs the run's start round.
func (b *bench) start(x *round.Runner) round.Outcome {
	return b.run(x, decide.RunApproved{Now: time.Now().UTC()})
}

// complete reports step i's first attempt started, then completed, and
// returns the completion's outcome.
func (b *bench) complete(x *round.Runner, i int) round.Outcome {
	b.t.Helper()
	b.run(x, started(b.stepID(i)))
	return b.run(x, completed(b.stepID(i)))
}

func started(step string) decide.Input {
	return decide.ResultStarted{StepID: step, LogicalAttempt: 1, EngineAttemptID: "1", WorkerID: "w", Now: time.Now().UTC()}
}

func completed(step string) decide.Input {
	return decide.ResultCompleted{StepID: step, LogicalAttempt: 1, EngineAttemptID: "1",
		Output: json.RawMessage(`{"ok":true}`), Now: time.Now().UTC()}
}

// events returns the run's whole log.
func (b *bench) events() []events.Event {
	b.t.Helper()
	evs, err := b.log.EventsFetchAfter(b.t.Context(), b.runID, 0, 1<<20)
	require.NoError(b.t, err)
	return evs
}

// plan decodes the run's plan from its RunApproved, as a round does.
func (b *bench) plan(evs []events.Event) *plan.Plan {
	b.t.Helper()
	var d events.RunApprovedData
	require.NoError(b.t, evs[0].Data(&d))
	var p plan.Plan
	require.NoError(b.t, json.Unmarshal(d.Plan, &p))
	p.ApplyDefaults()
	return &p
}

// checkpointRow is the run's row of run_checkpoints.
type checkpointRow struct {
	Version, Covered int64
	Format           int16
	State            []byte
}

// checkpoint returns the run's checkpoint row, and whether there is one.
func (b *bench) checkpoint() (checkpointRow, bool) {
	b.t.Helper()
	var r checkpointRow
	err := b.db.Pool.QueryRow(b.t.Context(), `
		SELECT checkpoint_version, covered_seq, format_version, state FROM run_checkpoints WHERE run_id = $1`,
		b.runID).Scan(&r.Version, &r.Covered, &r.Format, &r.State)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false
	}
	require.NoError(b.t, err)
	return r, true
}

// requireFaithful asserts that the run's checkpoint restores to the fold
// of the log up to its covered runSeq, and that folding the rest of the
// log into it gives the fold of the whole log.
func (b *bench) requireFaithful() {
	b.t.Helper()
	row, ok := b.checkpoint()
	require.True(b.t, ok, "the run has a checkpoint")
	evs := b.events()
	p := b.plan(evs)
	restored, err := decide.RestoreCheckpoint(p, row.State)
	require.NoError(b.t, err)
	prefix, err := decide.Fold(p, evs[:row.Covered])
	require.NoError(b.t, err)
	require.Equal(b.t, prefix, restored, "the checkpoint is the fold of the log up to runSeq %d", row.Covered)
	full, err := decide.Fold(p, evs)
	require.NoError(b.t, err)
	rest, err := restored.Apply(evs[row.Covered:]...)
	require.NoError(b.t, err)
	require.Equal(b.t, full, rest, "checkpoint + the events after it = the full replay")
}

// taskCounts returns how many outbox messages each task dedupe id has.
func (b *bench) taskCounts() map[string]int {
	b.t.Helper()
	rows, err := b.db.Pool.Query(b.t.Context(),
		`SELECT dedupe_id, count(*)::int FROM outbox WHERE subject LIKE 'weft.tasks.%' GROUP BY dedupe_id`)
	require.NoError(b.t, err)
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	require.NoError(b.t, err)
	return out
}

// A round writes a checkpoint once CheckpointSteps attempts ended since
// the last one; every later round restores from the latest checkpoint and
// reads only the events after it, and each checkpoint is the fold of the
// log up to its runSeq.
func TestCheckpointRotatesBySteps(t *testing.T) {
	t.Parallel()
	b := newBench(t, 23)
	x := newRunner(b.db.Pool, round.Config{CheckpointSteps: 5, CheckpointBytes: -1, WarmRuns: -1})
	b.start(x)
	var lastCovered int64
	for i := range b.steps {
		out := b.complete(x, i)
		require.Equal(t, lastCovered, out.Checkpoint.Restored, "step %d: restored from the latest checkpoint", i)
		if row, ok := b.checkpoint(); ok && row.Covered != lastCovered {
			require.Equal(t, row.Version, out.Checkpoint.Written, "step %d wrote the new checkpoint", i)
			require.Equal(t, int64((i+1)/5), row.Version, "one rotation per 5 ended attempts")
			b.requireFaithful()
			lastCovered = row.Covered
		} else {
			require.Zero(t, out.Checkpoint.Written)
		}
	}
	row, _ := b.checkpoint()
	require.Equal(t, int64(4), row.Version)
	require.Equal(t, int16(decide.CheckpointFormat), row.Format)
	require.Equal(t, events.RunCompleted, b.events()[len(b.events())-1].EventType)
	b.requireFaithful()
}

// The bytes threshold rotates on its own: with the steps trigger off, a
// checkpoint is written once the estimated history since the last one
// reaches CheckpointBytes.
func TestCheckpointRotatesByBytes(t *testing.T) {
	t.Parallel()
	b := newBench(t, 12)
	x := newRunner(b.db.Pool, round.Config{CheckpointSteps: -1, CheckpointBytes: 3000, WarmRuns: -1})
	b.start(x)
	for i := range b.steps {
		b.complete(x, i)
	}
	row, ok := b.checkpoint()
	require.True(t, ok)
	require.GreaterOrEqual(t, row.Version, int64(2), "rotated more than once")
	evs := b.events()
	var since int
	for _, e := range evs[row.Covered:] {
		since += round.HistoryBytes(e)
	}
	require.Less(t, since, 3000, "the history after the last checkpoint is under the threshold")
	b.requireFaithful()
}

// Old writer, new reader: a run whose engine wrote no checkpoint (an
// engine from before checkpoints, here one with both triggers off) is
// folded from runSeq 1 by the new engine, which decides the same and
// starts checkpointing it.
func TestNoCheckpointRowMeansFullReplay(t *testing.T) {
	t.Parallel()
	b := newBench(t, 10)
	old := newRunner(b.db.Pool, round.Config{CheckpointSteps: -1, CheckpointBytes: -1})
	b.start(old)
	for i := range 6 {
		require.Zero(t, b.complete(old, i).Checkpoint.Written)
	}
	_, ok := b.checkpoint()
	require.False(t, ok, "the old writer wrote no checkpoint")

	x := newRunner(b.db.Pool, round.Config{CheckpointSteps: 3, CheckpointBytes: -1, WarmRuns: -1})
	out := b.run(x, started(b.stepID(6)))
	require.Equal(t, []string{"StepStarted"}, specTypes(out.Decision.Events), "the full replay decides as usual")
	require.Equal(t, round.CheckpointUse{Version: 0, Restored: 0, Written: 1}, out.Checkpoint,
		"no row: folded from runSeq 1; 6 ended attempts since: the first checkpoint")
	head := b.events()[len(b.events())-1].RunSeq
	out = b.run(x, completed(b.stepID(6)))
	require.Equal(t, round.CheckpointUse{Version: 1, Restored: head}, out.Checkpoint, "restored from it")
	for i := 7; i < b.steps; i++ {
		b.complete(x, i)
	}
	b.requireFaithful()
}

// New writer, old reader: a checkpoint row of a format this build does not
// know is ignored (the run is folded from runSeq 1, and decides the same)
// and never overwritten; a row of a known format whose record does not
// restore is ignored too, and replaced by the next rotation. Under both
// ownership modes.
func TestUnreadableCheckpointIsIgnored(t *testing.T) {
	t.Parallel()
	for _, cas := range []bool{false, true} {
		for _, c := range []struct {
			name, state string
			format      int
			kept        bool
		}{
			{"newer format", `{"format":99,"fromTheFuture":true}`, 99, true},
			{"corrupt record", `{"format":1,"runId":"nope"}`, 1, false},
		} {
			t.Run(fmt.Sprintf("%s/cas=%t", c.name, cas), func(t *testing.T) {
				t.Parallel()
				testUnreadableCheckpoint(t, cas, c.state, c.format, c.kept)
			})
		}
	}
}

func testUnreadableCheckpoint(t *testing.T, cas bool, state string, format int, kept bool) {
	b := newBench(t, 12)
	x := newRunner(b.db.Pool, round.Config{CheckpointSteps: 2, CheckpointBytes: -1, CASRequired: cas})
	b.start(x)
	for i := range 3 {
		b.complete(x, i)
	}
	_, err := b.db.Pool.Exec(t.Context(), `UPDATE run_checkpoints SET format_version = $2, state = $3 WHERE run_id = $1`,
		b.runID, format, state)
	require.NoError(t, err)
	before, _ := b.checkpoint()
	// A Runner that has the run warm would not read the record (warm.go).
	x = newRunner(b.db.Pool, round.Config{CheckpointSteps: 2, CheckpointBytes: -1, CASRequired: cas})

	out := b.run(x, started(b.stepID(3)))
	require.Zero(t, out.Checkpoint.Restored, "the unreadable checkpoint is not restored")
	require.Equal(t, before.Version, out.Checkpoint.Version)
	require.Equal(t, []string{"StepStarted"}, specTypes(out.Decision.Events), "the full replay decides as usual")
	out = b.run(x, completed(b.stepID(3)))
	require.Equal(t, []string{"StepCompleted", "StepScheduled"}, specTypes(out.Decision.Events))
	for i := 4; i < b.steps; i++ {
		b.complete(x, i)
	}
	after, _ := b.checkpoint()
	if kept {
		require.Equal(t, before, after, "a newer format's checkpoint is left alone")
		return
	}
	require.Greater(t, after.Version, before.Version, "the corrupt checkpoint was replaced")
	b.requireFaithful()
}

// specTypes lists the types of a decision's events.
func specTypes(specs []events.Spec) []string {
	out := []string{}
	for _, s := range specs {
		out = append(out, string(s.Type))
	}
	return out
}
