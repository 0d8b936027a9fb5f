package decide

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// message is an input waiting for delivery; due is a timer's due time.
type message struct {
	in  Input
	due time.Time
}

// world drives one run of a random plan through random interleavings: it
// delivers pending messages in random order, redelivers old ones, injects
// signals (sensible and not), and plays the workers and the timer table.
type world struct {
	t       *testing.T
	r       *rand.Rand
	b       *bundle
	bag     []message
	sent    []message
	signals int
	ids     int // the last signal id given
}

// TestDecideProperties runs many random plans through random deliveries,
// folding each round's events back into the state, and checks the
// invariants of each round and of each finished run.
func TestDecideProperties(t *testing.T) {
	t.Parallel()
	for seed := range uint64(500) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			w := &world{t: t, r: r, b: setupWith(t, events.RunApprovedData{Input: json.RawMessage(`{"n": 1}`)}, randomPlan(r)...)}
			w.bag = []message{{in: approve()}}
			for round := 0; w.step(); round++ {
				require.Less(t, round, 5000, "the run does not end")
			}
			requireRunInvariants(t, w.b)
		})
	}
}

// randomPlan returns 1 to 6 steps; each depends on some earlier ones, and
// about one in five waits for a signal. About half the activity steps
// read the run's input and their dependencies' results through
// expressions, and some of those fail to evaluate; about one step in four
// has a condition, true, false, or failing to evaluate; about one step
// with dependencies in three runs after all of them ended (allDone) or
// after one failed (anyFailed), half of the latter handling that failure.
func randomPlan(r *rand.Rand) []plan.Step {
	steps := make([]plan.Step, 1+r.IntN(6))
	for i := range steps {
		id := fmt.Sprintf("s%d", i)
		var deps []string
		for j := range i {
			if r.IntN(3) == 0 {
				deps = append(deps, fmt.Sprintf("s%d", j))
			}
		}
		if r.IntN(5) == 0 {
			steps[i] = wait(id, "sig-"+id, time.Duration(r.IntN(2))*time.Minute, deps...)
		} else {
			steps[i] = withRetry(act(id, deps...), 1+r.IntN(3), time.Duration(r.IntN(2))*time.Second)
			if r.IntN(2) == 0 {
				steps[i].Input = randomExpressions(r, deps)
			}
			if r.IntN(4) == 0 {
				randomForEach(r, &steps[i])
			}
		}
		if r.IntN(4) == 0 {
			steps[i].If = []string{"input.n > 0", "input.n < 0", "input.nope"}[r.IntN(3)]
		}
		if len(deps) > 0 && r.IntN(3) == 0 {
			steps[i].RunIf = []plan.RunIf{plan.RunIfAllDone, plan.RunIfAnyFailed}[r.IntN(2)]
			if steps[i].RunIf == plan.RunIfAnyFailed && r.IntN(2) == 0 {
				steps[i].Handles = []string{deps[r.IntN(len(deps))]}
			}
		}
	}
	return steps
}

// randomForEach makes s a forEach step over 0 to 4 elements (one in
// eight lists fails to evaluate), with 1 to 3 in parallel, failing fast
// or not, its input reading the element.
func randomForEach(r *rand.Rand, s *plan.Step) {
	s.ForEach = []string{"[]", "[1]", "[1, 2]", "[1, 2, 3, 4]", "input.n == 1 ? ['a', 'b', 'c'] : []",
		"[input.n, input.n + 1]", "[[1], [2], [3]]", "input.nope"}[r.IntN(8)]
	s.MaxParallel = 1 + r.IntN(3)
	failFast := r.IntN(2) == 0
	s.FailFast = &failFast
	s.Input = json.RawMessage(`{"item": "${{ item }}", "index": "${{ index }}"}`)
}

// randomExpressions returns an input reading the run's input and the
// status and output of each dependency; one in eight reads a key the
// run's input does not have, which fails the step (EXPRESSION_ERROR).
func randomExpressions(r *rand.Rand, deps []string) json.RawMessage {
	key := "n"
	if r.IntN(8) == 0 {
		key = "missing"
	}
	in := map[string]string{"n": "${{ input." + key + " + 1 }}", "text": "n=${{ input.n }}"}
	for _, d := range deps {
		in[d] = "${{ steps." + d + ".status == 'SUCCESS' ? steps." + d + ".output : null }}"
	}
	b, _ := json.Marshal(in)
	return b
}

// step delivers one message and reports whether the run goes on.
func (w *world) step() bool {
	w.b.now = w.b.now.Add(time.Duration(w.r.IntN(1500)) * time.Millisecond)
	m, ok := w.next()
	if !ok {
		return false
	}
	in := m.in
	if !m.due.IsZero() && m.due.After(w.b.now) && w.r.IntN(4) != 0 {
		in = withNow(in, m.due) // most timers fire on time, some early
	}
	pre := w.b.s
	d := w.b.decide(in)
	requireCheckpointRestores(w.t, w.b)
	w.sent = append(w.sent, m)
	requireScheduledWhenReady(w.t, w.b.p, pre, d)
	again := Decide(w.b.p, w.b.s, in)
	require.Empty(w.t, again.Events, "deciding %T again decides no events", in)
	require.Empty(w.t, again.Tasks)
	require.Empty(w.t, again.Cancels)
	w.plan(d)
	return true
}

// next picks the next message: mostly a pending one, sometimes a
// redelivery or a signal; when nothing is pending it plays the operator,
// who resumes a paused run and sends the signals steps wait for.
func (w *world) next() (message, bool) {
	switch n := w.r.IntN(12); {
	case n == 0 && len(w.sent) > 0:
		return w.sent[w.r.IntN(len(w.sent))], true
	case n <= 2 && w.signals < 8:
		return w.randomSignal(), true
	case len(w.bag) > 0:
		i := w.r.IntN(len(w.bag))
		m := w.bag[i]
		w.bag = slices.Delete(w.bag, i, i+1)
		return m, true
	}
	s := w.b.s
	if s.Status.Terminal() {
		return message{}, false
	}
	if s.Status == events.RunStatusPaused {
		return w.signal(plan.SignalResume, ""), true
	}
	for _, ps := range w.b.p.Steps {
		if ps.Kind == plan.KindWaitSignal && s.Steps[ps.ID].InFlight() {
			return w.signal(ps.Signal, `{"by":"operator"}`), true
		}
	}
	require.Failf(w.t, "stuck", "nothing to deliver and the run is %s: %+v", s.Status, s.Steps)
	return message{}, false
}

// randomSignal returns a control, waitSignal, unknown or duplicate signal.
func (w *world) randomSignal() message {
	w.signals++
	ids := make([]string, 0, len(w.b.p.Steps)+1)
	for _, ps := range w.b.p.Steps {
		ids = append(ids, ps.ID)
	}
	id := append(ids, "zz")[w.r.IntN(len(ids)+1)]
	switch w.r.IntN(9) {
	case 0:
		return w.signal(plan.SignalPause, "")
	case 1:
		return w.signal(plan.SignalResume, "")
	case 2:
		if w.r.IntN(3) == 0 {
			return w.signal(plan.SignalCancel, "")
		}
		return w.signal("pause", "")
	case 3, 4:
		for _, ps := range w.b.p.Steps {
			if w.b.s.Steps[ps.ID].Status == events.StepStatusFailed {
				id = ps.ID
			}
		}
		return w.signal(plan.SignalRetryStep, `{"stepId":"`+id+`"}`)
	case 5:
		return w.signal("sig-"+id, `{"n":1}`)
	default:
		for _, m := range w.sent {
			if _, ok := m.in.(SignalAccepted); ok {
				return m // the same signal id again
			}
		}
		return w.signal("nobody-waits", "")
	}
}

// signal returns a new signal, with an id of its own, to deliver now. One
// in four is instead accepted now (its SignalAccepted appended to the log)
// and left in the bag, to be delivered later than signals accepted after
// it, as two engines sharing the events consumer may; another signal is
// sent in its place.
func (w *world) signal(name, payload string) message {
	w.ids++
	m := message{in: sig(w.ids, name, payload)}
	if w.r.IntN(4) == 0 && w.signals < 16 {
		w.b.accepted(w.b.stamp(m.in).(SignalAccepted))
		w.bag = append(w.bag, m)
		return w.randomSignal()
	}
	return m
}

// plan plays the workers and the timer table for a decision's outputs.
func (w *world) plan(d Decision) {
	for _, task := range d.Tasks {
		if w.r.IntN(5) != 0 {
			w.bag = append(w.bag, message{in: start(task.StepID, task.LogicalAttempt)})
		}
		var out Input
		switch n := w.r.IntN(20); {
		case n < 12:
			out = done(task.StepID, task.LogicalAttempt)
		case n < 18:
			out = fail(task.StepID, task.LogicalAttempt, true)
		default:
			out = fail(task.StepID, task.LogicalAttempt, false)
		}
		w.bag = append(w.bag, message{in: out})
		if w.r.IntN(5) == 0 {
			w.bag = append(w.bag, message{in: out}) // a redelivery
		}
	}
	for _, tm := range d.Timers {
		w.bag = append(w.bag, message{in: TimerFired{StepID: tm.StepID, LogicalAttempt: tm.LogicalAttempt, Kind: tm.Kind}, due: tm.DueAt})
	}
}

// withNow returns in with Now set.
func withNow(in Input, now time.Time) Input {
	if tf, ok := in.(TimerFired); ok {
		tf.Now = now
		return tf
	}
	return in
}

// requireScheduledWhenReady checks each StepScheduled of d against the
// state just before it: every dependency of the step has succeeded.
func requireScheduledWhenReady(t *testing.T, p *plan.Plan, s State, d Decision) {
	t.Helper()
	s = s.clone()
	for _, e := range d.Events {
		if parent, _, child := events.ParseChildStepID(e.StepID); child && e.Type == events.StepScheduled {
			require.True(t, s.Steps[parent].InFlight(), "%s scheduled while %s is not in flight", e.StepID, parent)
		} else if e.Type == events.StepScheduled {
			ps, ok := p.Step(e.StepID)
			require.True(t, ok)
			failed := false
			for _, dep := range ps.DependsOn {
				st := s.Steps[dep].Status
				failed = failed || st == events.StepStatusFailed
				if ps.EffectiveRunIf() == plan.RunIfAllSucceeded {
					require.Equal(t, events.StepStatusSuccess, st, "%s scheduled before %s succeeded", e.StepID, dep)
				} else {
					require.True(t, st.Terminal(), "%s (%s) scheduled before %s ended", e.StepID, ps.RunIf, dep)
				}
			}
			if ps.RunIf == plan.RunIfAnyFailed {
				require.True(t, failed, "%s (anyFailed) scheduled with no dependency failed", e.StepID)
			}
		}
		n, _ := strconv.Atoi(e.LogicalAttemptID)
		s.apply(factOfSpec(e, n))
	}
}

// requireRunInvariants checks a finished run's log.
func requireRunInvariants(t *testing.T, b *bundle) {
	t.Helper()
	keys := map[string]bool{}
	outcomes := map[string]int{}
	ended := false // the run is in a terminal status
	for _, e := range b.log {
		require.False(t, keys[e.IdempotencyKey], "duplicate key: %s %s %s", e.EventType, e.StepID, e.LogicalAttemptID)
		keys[e.IdempotencyKey] = true
		switch e.EventType {
		case events.StepCompleted, events.StepFailed, events.StepSkipped:
			outcomes[e.StepID+"/"+e.LogicalAttemptID]++
			require.Equal(t, 1, outcomes[e.StepID+"/"+e.LogicalAttemptID], "second outcome of %s/%s", e.StepID, e.LogicalAttemptID)
		case events.RunCompleted, events.RunFailed, events.RunCancelled:
			require.False(t, ended, "a second terminal run event without a reopening in between")
			ended = true
			continue
		case events.RunResumed:
			if ended { // RETRY_STEP reopened a failed run
				ended = false
				continue
			}
		default:
		}
		if ended {
			require.Contains(t, []events.Type{events.SignalAccepted, events.SignalApplied}, e.EventType,
				"only signal records follow the end of the run")
		}
	}
	require.True(t, ended, "the run ended")
	requireAcceptanceOrder(t, b.log)
	switch b.s.Status {
	case events.RunStatusCompleted:
		// Every step succeeded; or was skipped by its condition, as an
		// anyFailed step with no failure, or with a dependency that failed
		// or was skipped; or failed, and a step that handles it succeeded.
		for parent, elems := range b.s.Elements { // an element succeeded if its step did
			elems.each(func(i int, st StepState) {
				require.True(t, b.s.Steps[parent].Status != events.StepStatusSuccess || st.Status == events.StepStatusSuccess, "%s[%d]", parent, i)
			})
		}
		for id, st := range b.s.Steps {
			ps, _ := b.p.Step(id)
			switch st.Status {
			case events.StepStatusSkipped:
				afterDep := slices.ContainsFunc(ps.DependsOn, func(d string) bool {
					return b.s.Steps[d].Status == events.StepStatusSkipped || b.s.Steps[d].Status == events.StepStatusFailed
				})
				require.True(t, ps.If != "" || ps.RunIf == plan.RunIfAnyFailed || afterDep, "%s skipped in a completed run", id)
			case events.StepStatusFailed:
				require.True(t, slices.ContainsFunc(b.p.Steps, func(h plan.Step) bool {
					return slices.Contains(h.Handles, id) && b.s.Steps[h.ID].Status == events.StepStatusSuccess
				}), "%s failed in a completed run, handled by no step that succeeded", id)
			default:
				require.Equal(t, events.StepStatusSuccess, st.Status, id)
			}
		}
	case events.RunStatusFailed:
		var failed bool
		for parent, elems := range b.s.Elements {
			elems.each(func(i int, st StepState) {
				require.True(t, st.Status.Terminal() || childCategory(st) == childIdle, // RETRY_STEP brought it back, and it never started
					"%s[%d] is %s in a failed run", parent, i, st.Status)
			})
		}
		for id, st := range b.s.Steps {
			require.True(t, st.Status.Terminal(), "%s is %s in a failed run", id, st.Status)
			failed = failed || st.Status == events.StepStatusFailed
		}
		timedOut := b.snap.Error != nil && b.snap.Error.Code == CodeRunTimeout
		require.True(t, failed || timedOut, "a failed run has a failed step, or timed out")
	default:
		require.Equal(t, events.RunStatusCancelled, b.s.Status)
	}
}

// requireAcceptanceOrder checks that the log applies signals in the order
// it accepted them (DESIGN.md: "a run's signals apply in acceptance
// (runSeq) order, never in delivery order"), each once.
func requireAcceptanceOrder(t *testing.T, log []events.Event) {
	t.Helper()
	var accepted, applied []SignalRef
	for _, e := range log {
		switch e.EventType {
		case events.SignalAccepted:
			var d events.SignalAcceptedData
			require.NoError(t, e.Data(&d))
			accepted = append(accepted, SignalRef{Name: d.SignalName, ID: d.SignalID})
		case events.SignalApplied:
			var d events.SignalAppliedData
			require.NoError(t, e.Data(&d))
			applied = append(applied, SignalRef{Name: d.SignalName, ID: d.SignalID})
		default:
		}
	}
	require.Equal(t, accepted, applied[:min(len(applied), len(accepted))], "signals applied out of acceptance order")
}

// requireCheckpointRestores checks that a checkpoint of the run's state
// restores to the same state.
func requireCheckpointRestores(t *testing.T, b *bundle) {
	t.Helper()
	if b.s.Head < 1 {
		return
	}
	data, err := MarshalCheckpoint(b.p, b.s)
	require.NoError(t, err)
	restored, err := RestoreCheckpoint(b.p, data)
	require.NoError(t, err)
	require.Equal(t, b.s, restored, "a checkpoint restores the folded state")
}
