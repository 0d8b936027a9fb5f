// Which signals the run page offers: one place that says, for a run's
// status (and a step's), whether a signal sent now can take effect. It
// encodes the gateway's refusals (docs/api.md, "Signals that can have no
// effect": a run that has ended takes no signal but RETRY_STEP on a FAILED
// run) and the engine's verdicts (docs/engine.md: PAUSE needs a RUNNING
// run, RESUME a PAUSED one, RETRY_STEP a FAILED step, a run not started
// takes only CANCEL, a PENDING run takes none). A signal the engine would
// only answer `ignored` is not offered; its button says why instead.

// STARTED are the statuses of a run that has started and not ended.
const STARTED = new Set(['RUNNING', 'PAUSED']);
// NOT_STARTED are the statuses of an approved run that has not started:
// its start round has not come, or its admission limit queued it.
const NOT_STARTED = new Set(['APPROVED', 'QUEUED']);

// runSignal returns {ok, why} for a run-level control signal (PAUSE,
// RESUME, CANCEL) sent to a run in status: ok when it can take effect,
// why the button's title either way.
export function runSignal(name, status) {
  switch (name) {
    case 'PAUSE':
      return status === 'RUNNING'
        ? { ok: true, why: 'Pause: no new step starts until resumed' }
        : { ok: false, why: 'Only a running run can be paused' };
    case 'RESUME':
      return status === 'PAUSED'
        ? { ok: true, why: 'Resume the run' }
        : { ok: false, why: 'Only a paused run can be resumed' };
    case 'CANCEL':
      if (STARTED.has(status) || NOT_STARTED.has(status)) return { ok: true, why: 'Cancel the run' };
      return { ok: false, why: status === 'PENDING' ? 'The run has not been approved' : 'The run has ended' };
    default:
      return { ok: false, why: `${name} is no run-level signal` };
  }
}

// canRetryStep reports whether RETRY_STEP of a step in stepStatus can take
// effect on a run in runStatus: the step FAILED, and the run is FAILED
// (the retry reopens it) or has started and not ended. A failed step of a
// COMPLETED run (a handled failure) or a CANCELLED one cannot be retried.
export function canRetryStep(runStatus, stepStatus) {
  return stepStatus === 'FAILED' && (runStatus === 'FAILED' || STARTED.has(runStatus));
}

// canSendStepSignal reports whether the signal a waitSignal step in
// stepStatus waits for can complete it now: the step is RUNNING (waiting)
// and the run has started and not ended.
export function canSendStepSignal(runStatus, stepStatus) {
  return stepStatus === 'RUNNING' && STARTED.has(runStatus);
}
