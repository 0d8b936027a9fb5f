package decide

import (
	"github.com/weftrun/weft/pkg/plan"
)

// resync re-drives a run the bus may have failed (see Resync): it starts an
// approved run, applies the accepted signals still pending, in order, and
// dispatches again the tasks of attempts that look lost. A terminal run
// needs nothing.
func (d *decider) resync(in Resync) {
	if d.s.Status.Terminal() {
		return
	}
	d.start(in.Full, in.Hold, in.DelayUntil, in.Refuse, in.Rerun)
	d.applyPending()
	d.s.activities(d.p.Plan, func(ps *plan.Step, st StepState) {
		if !d.lost(st, ps, in) {
			return
		}
		input, _, failure := d.inputOf(ps)
		if failure != nil { // a scheduled attempt's input was resolved: not reached
			return
		}
		t := d.taskOf(ps, st.Attempt, input)
		t.Resend = true
		d.out.Tasks = append(d.out.Tasks, t)
	})
}

// lost reports whether an in-flight attempt has gone quiet for longer than
// it could be working: scheduled and not started within its timeout, or
// started and without an outcome within its timeout plus TaskGrace (the
// worker stops the activity at its timeout and then reports).
func (d *decider) lost(st StepState, ps *plan.Step, in Resync) bool {
	if !st.InFlight() || d.s.Status.Terminal() {
		return false
	}
	if st.StartedAt.IsZero() {
		return !st.ScheduledAt.IsZero() && d.now.Sub(st.ScheduledAt) > timeoutOf(ps)
	}
	return d.now.Sub(st.StartedAt) > timeoutOf(ps)+in.TaskGrace
}
