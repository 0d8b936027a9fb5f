package decide

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// echoPlanDoc is the headline benchmark's plan (bench/system_test.go's
// systemPlan): three echo steps in a line, each one's input an
// expression of the one before's output, and the run's output the last
// one's.
const echoPlanDoc = `{"planId":"system3","planVersion":"1","steps":[
	{"id":"a","activity":"echo","input":{"order":"${{ input }}"}},
	{"id":"b","activity":"echo","dependsOn":["a"],"input":{"from_a":"${{ steps.a.output }}"}},
	{"id":"c","activity":"echo","dependsOn":["b"],"input":{"from_b":"${{ steps.b.output }}"}}],
	"output":"${{ steps.c.output }}"}`

// echoCompletion returns a run of echoPlanDoc, decoded as the engine
// decodes a run's plan, in the state its start left it (step a
// dispatched), and the completion of step a, its output the task's input
// as an echo worker returns it.
func echoCompletion(tb testing.TB) (*plan.Plan, State, ResultCompleted) {
	tb.Helper()
	var p plan.Plan
	require.NoError(tb, json.Unmarshal([]byte(echoPlanDoc), &p))
	require.NoError(tb, p.Validate(plan.Limits{}))
	p.ApplyDefaults()
	approved, err := events.New(events.Spec{RunID: testRun, Type: events.RunApproved, PlanVersion: "1", EmittedAt: t0,
		Data: events.RunApprovedData{PlanID: "system3", PlanVersion: "1", EnvironmentID: "env",
			Input: json.RawMessage(`{"orderId":"o-1234","amount":42,"currency":"EUR"}`)}})
	require.NoError(tb, err)
	approved.RunSeq = 1
	s, err := Fold(&p, []events.Event{approved})
	require.NoError(tb, err)
	d := Decide(&p, s, RunApproved{Now: t0})
	s, err = s.Apply(built(tb, s.Head, d)...)
	require.NoError(tb, err)
	require.Len(tb, d.Tasks, 1)
	task := d.Tasks[0]
	return &p, s, ResultCompleted{StepID: task.StepID, LogicalAttempt: task.LogicalAttempt, EngineAttemptID: "1",
		WorkerID: "w", Output: task.Input, Now: t0.Add(12345 * time.Nanosecond)}
}

// built returns d's events as the round builds them for the log: from
// head+1, their emittedAt as Postgres stores it.
func built(tb testing.TB, head int64, d Decision) []events.Event {
	tb.Helper()
	evs := make([]events.Event, len(d.Events))
	for i, spec := range d.Events {
		e, err := events.New(spec)
		require.NoError(tb, err)
		e.RunSeq, e.EmittedAt = head+int64(i)+1, e.EmittedAt.Truncate(time.Microsecond)
		evs[i] = e
	}
	return evs
}

// A round's decider pass on a step's completion: Decide, and the fold of
// its events into the state the run's next round starts from. Folding
// them from the decision (ApplyDecided) gives the state that decoding
// them (Apply) gives. The allocations of each part are logged, for
// BENCHMARKS.md; BenchmarkDecidePass times them. Not parallel:
// AllocsPerRun counts the allocations of the whole process.
func TestDecidePassAllocs(t *testing.T) {
	p, s, in := echoCompletion(t)
	d := Decide(p, s, in)
	require.Equal(t, []string{"StepStarted a 1", "StepCompleted a 1", "StepScheduled b 1"}, descs(d.Events))
	evs := built(t, s.Head, d)
	decoded, err := s.Apply(evs...)
	require.NoError(t, err)
	decided, err := s.ApplyDecided(d, evs)
	require.NoError(t, err)
	require.Equal(t, decoded, decided, "folding the decision is folding its events")

	pp := Prepare(p)
	require.Equal(t, d, pp.Decide(s, in), "a prepared plan decides the same")

	decideAllocs := testing.AllocsPerRun(100, func() { Decide(p, s, in) })
	preparedAllocs := testing.AllocsPerRun(100, func() { pp.Decide(s, in) })
	decodeAllocs := testing.AllocsPerRun(100, func() { _, _ = s.Apply(evs...) })
	decidedAllocs := testing.AllocsPerRun(100, func() { _, _ = s.ApplyDecided(d, evs) })
	t.Logf("allocations of a completion's pass: Decide %.0f, on the prepared plan %.0f; fold of its %d events: decoding them %.0f, from the decision %.0f",
		decideAllocs, preparedAllocs, len(evs), decodeAllocs, decidedAllocs)
}

// BenchmarkDecidePass is the decider's share of the round that completes
// a step of a three-step echo run and schedules the next (the round's
// encoding of the events, the log and the bus left out): Decide, on the
// plan or on the plan prepared, and the fold of its events by decoding
// them or from the decision.
func BenchmarkDecidePass(b *testing.B) {
	p, s, in := echoCompletion(b)
	d := Decide(p, s, in)
	evs := built(b, s.Head, d)
	b.Run("part=decide", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Decide(p, s, in)
		}
	})
	pp := Prepare(p)
	b.Run("part=decide/plan=prepared", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pp.Decide(s, in)
		}
	})
	b.Run("part=fold/by=decoding", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Apply(evs...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("part=fold/by=decision", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.ApplyDecided(d, evs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
