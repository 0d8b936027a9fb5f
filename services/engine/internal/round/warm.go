package round

import (
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// warmRun is a run as the last transaction of this Runner that loaded it
// committed it: its plan, environment and state, and the history since
// its checkpoint. A round of a warm run reads only the events after that
// state's head (another engine's, or a signal's) instead of the run's
// checkpoint, RunApproved and every event since, and folds nothing it
// folded before: what the Temporal SDKs call a sticky cache. It is only a
// cache. A warm state is never ahead of the log, because it is kept only
// after its transaction committed; one that is behind is brought up to
// date by the events read after it; and every append is still checked
// against the run's head, so a round never acts on a state the log has
// moved past. A failed transaction forgets its runs.
type warmRun struct {
	plan        *decide.Prepared
	tenant      string
	environment string
	state       decide.State
	// covered, steps and bytes are the checkpoint's covered runSeq and the
	// history folded since (checkpointView).
	covered      int64
	steps, bytes int
}

// warmOf returns the warm runs among ids.
func (x *Runner) warmOf(ids []string) map[string]warmRun {
	out := make(map[string]warmRun, len(ids))
	for _, id := range ids {
		if w, ok := x.warm.get(id); ok {
			out[id] = w
		}
	}
	return out
}

// coolMoved drops from warm the runs whose checkpoint is not the one their
// history was counted from (another engine rotated it): they load as cold
// runs, so the next rotation counts from the right place.
func coolMoved(warm map[string]warmRun, cps map[string]*checkpointView) {
	for id, w := range warm {
		if cp := cps[id]; cp.covered != w.covered || cp.readOnly {
			delete(warm, id)
		}
	}
}

// restore returns the run's view: w's state with evs, the events after
// its head, folded in, and cp counting the history since the checkpoint.
// ok is false when evs do not fold onto w (a gap: the run was deleted and
// begun again); the run is then folded from runSeq 1.
func (w warmRun) restore(cp *checkpointView, evs []events.Event) (*runView, bool) {
	state := w.state // shared: states are values, which rounds replace and never modify
	if len(evs) > 0 {
		var err error
		if state, err = w.state.Apply(evs...); err != nil {
			return nil, false
		}
	}
	cp.data, cp.steps, cp.bytes, cp.warm = nil, w.steps, w.bytes, true
	cp.tally(evs)
	return &runView{plan: w.plan, tenant: w.tenant, environment: w.environment, state: state, cp: cp}, true
}

// keepWarm keeps the runs of a committed transaction warm, each as the
// transaction left it.
func (x *Runner) keepWarm(runs map[string]*runView) {
	if x.cfg.WarmRuns < 0 {
		return
	}
	for id, run := range runs {
		if run.err != nil {
			continue
		}
		w := warmRun{plan: run.plan, tenant: run.tenant, environment: run.environment, state: run.state,
			covered: run.cp.covered, steps: run.cp.steps, bytes: run.cp.bytes}
		if run.cp.written != 0 {
			w.covered, w.steps, w.bytes = run.state.Head, 0, 0
		}
		x.warm.put(id, w)
	}
}

// forget makes the runs of ids cold: a transaction that wrote to them
// failed, and what it folded may not be the log's.
func (x *Runner) forget(ids ...string) {
	for _, id := range ids {
		x.warm.del(id)
	}
}
