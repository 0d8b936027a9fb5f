package decide

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// TestCheckpointRestoresFold drives the random plans and interleavings of
// TestDecideProperties (the same seeds; one run in four starts under the
// DELAY policy) and checks, at every runSeq k of
// each finished run's log, that restoring a checkpoint of the fold up to
// k gives that fold exactly, and that folding the rest of the log into
// it gives the fold of the whole log:
// restore(checkpoint(fold(log[:k]))) + fold(log[k:]) == fold(log).
func TestCheckpointRestoresFold(t *testing.T) {
	t.Parallel()
	for seed := range uint64(500) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			w := &world{t: t, r: r, b: setup(t, randomPlan(r)...)}
			w.bag = []message{{in: approve()}}
			if seed%4 == 1 { // a start under the DELAY admission policy
				w.bag = []message{{in: RunApproved{DelayUntil: t0.Add(5 * time.Second)}}}
			}
			for round := 0; w.step(); round++ {
				require.Less(t, round, 5000, "the run does not end")
			}
			requireCheckpointsFaithful(t, w.b.p, w.b.log)
		})
	}
}

// requireCheckpointsFaithful checks a checkpoint at every runSeq of log.
func requireCheckpointsFaithful(t *testing.T, p *plan.Plan, log []events.Event) {
	t.Helper()
	full, err := Fold(p, log)
	require.NoError(t, err)
	prefix := NewState(p)
	for k := range log {
		prefix, err = prefix.Apply(log[k])
		require.NoError(t, err)
		data, err := MarshalCheckpoint(p, prefix)
		require.NoError(t, err)
		restored, err := RestoreCheckpoint(p, data)
		require.NoError(t, err)
		require.Equal(t, prefix, restored, "restore(checkpoint at runSeq %d) is the fold up to it", k+1)
		rest, err := restored.Apply(log[k+1:]...)
		require.NoError(t, err)
		require.Equal(t, full, rest, "checkpoint at runSeq %d plus the rest of the log is the full fold", k+1)
	}
}

// checkpointPlan is the plan of the golden checkpoint.
func checkpointPlan(t *testing.T) *plan.Plan {
	t.Helper()
	b := setup(t, withRetry(act("a"), 3, time.Second), act("b", "a"), wait("w", "go", time.Minute), act("c", "b", "w"), act("d", "a"))
	return b.p
}

// checkpointGolden is the state recorded in testdata/persisted/Checkpoint.json:
// every field of State set, a step in its initial state left out.
func checkpointGolden() State {
	at := time.Date(2024, 7, 1, 12, 0, 0, 123456000, time.UTC)
	return State{
		RunID: testRun, Status: events.RunStatusPaused, Head: 42,
		Steps: map[string]StepState{
			"a": {Status: events.StepStatusSuccess, Attempt: 2, Scheduled: true, EngineAttemptID: "3", SeriesStart: 1,
				ScheduledAt: at, StartedAt: at.Add(time.Second), ActivityKey: "order-7",
				Input: `{"order":7}`, Output: `{"rows":3,"note":"<ok>"}`, Artifacts: `[{"uri":"s3://b/k","kind":"csv"}]`},
			"b": {Status: events.StepStatusPending, Attempt: 2, SeriesStart: 2, RetryAt: at.Add(time.Minute),
				Error: events.StepError{Code: "BOOM", Message: "boom", Retryable: true, Category: "USER"}},
			"w": {Status: events.StepStatusRunning, Attempt: 1, Scheduled: true, SeriesStart: 1,
				Deadline: at.Add(time.Hour), ScheduledAt: at, StartedAt: at},
			"c": {Status: events.StepStatusPending, Attempt: 1, SeriesStart: 1},
			"d": {Status: events.StepStatusSkipped, Attempt: 1, SeriesStart: 1, SkippedByCondition: "d"},
		},
		Signals: map[SignalRef]bool{{Name: "PAUSE", ID: "s-2"}: true, {Name: "go", ID: "s-1"}: true},
		Pauses:  1, Resumes: 2, Failures: 3, SignalsApplied: 4,
		Queued: true, DelayedUntil: at.Add(10 * time.Second),
		Pending: []SignalAccepted{{SignalID: "s-3", Name: "later", Payload: json.RawMessage(`{"n": 1, "s": "x"}`),
			EventID: "0190a8e2-7b3c-7000-8000-000000000003"}},
		Buffered: []SignalAccepted{{SignalID: "s-1", Name: "go", EventID: "0190a8e2-7b3c-7000-8000-000000000001"}},
		Run:      RunInfo{TenantID: "acme", ProjectID: "shop", EnvironmentID: "prod", PlanID: "p", Input: `{"date":"2024-07-01"}`},
	}
}

// TestPersistedGoldenCheckpoint: today's writer writes the golden
// checkpoint record byte for byte, today's reader restores it to every
// field, and a newer writer's extra field is ignored.
func TestPersistedGoldenCheckpoint(t *testing.T) {
	t.Parallel()
	p := checkpointPlan(t)
	want := checkpointGolden()
	written, err := MarshalCheckpoint(p, want)
	require.NoError(t, err)
	golden := goldentest.Compare(t, filepath.Join("testdata", "persisted", "Checkpoint.json"), written)

	got, err := RestoreCheckpoint(p, golden)
	require.NoError(t, err)
	require.Equal(t, want, got)

	got, err = RestoreCheckpoint(p, goldentest.WithUnknownField(t, golden))
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestCheckpointNotRestorable: a record of a newer format, of another
// plan version, naming a step the plan does not have, without a head, or
// not JSON, is refused with ErrCheckpoint (the round then folds the whole
// log).
func TestCheckpointNotRestorable(t *testing.T) {
	t.Parallel()
	p := checkpointPlan(t)
	written, err := MarshalCheckpoint(p, checkpointGolden())
	require.NoError(t, err)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(written, &m))
		f(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	for name, data := range map[string][]byte{
		"newer format": edit(func(m map[string]any) { m["format"] = CheckpointFormat + 1 }),
		"no format":    edit(func(m map[string]any) { delete(m, "format") }),
		"other plan":   edit(func(m map[string]any) { m["planVersion"] = "v2" }),
		"unknown step": edit(func(m map[string]any) {
			m["steps"].(map[string]any)["zz"] = map[string]any{"status": "SUCCESS", "attempt": 1, "seriesStart": 1}
		}),
		"no head":        edit(func(m map[string]any) { delete(m, "head") }),
		"not JSON":       []byte(`{"format":1,`),
		"not an object":  []byte(`[1]`),
		"empty document": []byte(``),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := RestoreCheckpoint(p, data)
			require.ErrorIs(t, err, ErrCheckpoint)
		})
	}
	_, err = MarshalCheckpoint(p, NewState(p))
	require.Error(t, err, "a run with no events has no checkpoint")
}

// TestCheckpointCoversState fails when State or SignalAccepted gains a
// field: the checkpoint record must carry it too (StepState is held to
// the record by a conversion that stops compiling), or, as Fans, restore
// must derive it from what the record carries, and
// TestCheckpointRestoresFold must exercise it.
func TestCheckpointCoversState(t *testing.T) {
	t.Parallel()
	fields := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	require.Equal(t, []string{"RunID", "Status", "Head", "Steps", "Signals", "Pauses", "Resumes", "Failures",
		"SignalsApplied", "Queued", "DelayedUntil", "Pending", "Buffered", "Run", "Elements", "Fans", "ChildEnds"}, fields(State{}),
		"a State field changed: record it in checkpointRecord (checkpoint.go) and update this list")
	// Now is never set on a signal the state keeps (accept drops it).
	require.Equal(t, []string{"SignalID", "Name", "Payload", "EventID", "Now"}, fields(SignalAccepted{}),
		"a SignalAccepted field changed: record it in checkpointSignal (checkpoint.go) and update this list")
}
