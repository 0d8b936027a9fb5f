// The run page: the snapshot's header, the STALE banner, the root cause of
// a failure, the run's input and output, the steps graph with the panel of
// the step opened from it, the event timeline and the run's actions.
// It stays live with a long poll on the snapshot (waitForSeq). The step
// whose panel is open is in the address, /runs/{runId}?step={stepId}, so
// a link can open a step; a child run's breadcrumb leads to its parent.

import { ApiError, get, runPath, sendSignal, whoami } from './api.js';
import { childRunsHref, depthChip, hasSubPlans, parentCrumbs } from './childruns.js';
import { createDag } from './dag.js';
import { h, icon, isTerminal, pill, pollMs, replace, stalePill } from './dom.js';
import { createTimeline } from './events.js';
import { between, dateTime, duration, relativeTime, shortId } from './format.js';
import { jsonBlock } from './jsonview.js';
import { createRerunForm, mayRerun, rerunOfMark } from './rerun.js';
import { runSignal } from './signals.js';
import { createWaterfall, waterfallLegend } from './waterfall.js';
import { createStepPanel, topSteps } from './stepdetail.js';

const LONG_POLL = '25s';
const CLIENT_TIMEOUT_MS = 40000;
const BACKOFF_MS = pollMs(1000);
const NOT_FOUND_RETRY_MS = pollMs(2000); // how often a run that answered 404 is asked for again

// mountRun draws the page of runId into root and returns {unmount}.
export function mountRun(root, view, runId) {
  const ac = new AbortController();
  let snap = null;
  let etag = null;

  const buttons = {
    PAUSE: h('button', { type: 'button', class: 'btn', testid: 'btn-pause', disabled: true }, icon('pause'), 'Pause'),
    RESUME: h('button', { type: 'button', class: 'btn', testid: 'btn-resume', disabled: true }, icon('play'), 'Resume'),
    CANCEL: h('button', { type: 'button', class: 'btn btn-danger', testid: 'btn-cancel', disabled: true }, icon('stop'), 'Cancel'),
  };
  const banner = h('div', { class: 'stale-banner', role: 'alert', testid: 'stale-banner', hidden: true });
  const failure = h('div', { class: 'run-error', testid: 'run-error', hidden: true });
  const queued = h('div', { class: 'run-queued', role: 'status', testid: 'run-queued', hidden: true });
  const problem = h('div', { class: 'inline-error', role: 'alert', hidden: true, testid: 'run-problem' });
  const pills = h('div', { class: 'run-pills' });
  const scope = h('div', { class: 'run-scope', testid: 'run-scope' });
  const meta = h('dl', { class: 'meta' });
  const stepsSummary = h('span', { class: 'muted small' });
  const dag = createDag();
  const panel = createStepPanel(runId, ac.signal);
  const data = h('section', { class: 'card run-data', testid: 'run-data', hidden: true });
  const dataStates = { input: {}, output: {} };
  let dataShown = null; // the input and output data shows, as JSON
  const timeline = createTimeline(runId, ac.signal);
  const waterfall = createWaterfall();
  timeline.onEvents(waterfall.add);
  const parentSlot = h('span', { class: 'crumbs-parent-slot' });
  const childrenLink = h('a', { href: childRunsHref(runId), 'data-nav': true, class: 'btn btn-sm', testid: 'run-children-link', hidden: true },
    'Child runs');
  let parentShown = null; // the parent the breadcrumb shows, as JSON
  let opened = new URLSearchParams(location.search).get('step'); // the step to open with the first snapshot
  const copy = h('button', { type: 'button', class: 'btn btn-ghost btn-icon', title: 'Copy run id', 'aria-label': 'Copy run id' }, icon('copy'));
  const rerunOf = h('div', { class: 'run-rerun-slot' });
  let rerunOfShown = null; // the source the header names, as JSON
  const rerun = createRerunForm(view, runId);
  // stepsCard's data-rerun is "unknown" until GET /v1/whoami has answered,
  // then whether its steps offer "Rerun from here".
  const stepsCard = h('section', { class: 'card', testid: 'steps-card', 'data-rerun': 'unknown' },
    h('div', { class: 'card-head' }, h('h2', { text: 'Steps' }), h('div', { class: 'card-head-end' }, childrenLink, dag.controls, stepsSummary)),
    dag.el);
  let me = null; // the key's GET /v1/whoami answer, once it came

  replace(root,
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
      h('a', { href: '/', 'data-nav': true, text: 'Runs' }), h('span', { class: 'crumb-sep', text: '/' }),
      parentSlot,
      h('span', { class: 'mono', title: runId, text: shortId(runId) })),
    banner,
    h('section', { class: 'card run-head' },
      h('div', { class: 'run-title' },
        h('div', { class: 'run-title-main' },
          h('div', { class: 'eyebrow', text: 'Run' }),
          h('h1', { class: 'run-id' }, h('span', { class: 'mono', testid: 'run-id', text: runId }), copy),
          h('div', { class: 'run-sub' }, pills, scope),
          rerunOf),
        h('div', { class: 'run-actions', role: 'group', 'aria-label': 'Run actions' }, buttons.PAUSE, buttons.RESUME, buttons.CANCEL)),
      meta),
    problem,
    queued,
    failure,
    data,
    stepsCard,
    rerun.el,
    panel.el,
    h('section', { class: 'card', testid: 'timing' },
      h('div', { class: 'card-head' }, h('h2', { text: 'Timing' }), waterfallLegend()),
      waterfall.el),
    h('section', { class: 'card' },
      h('div', { class: 'card-head' }, h('h2', {}, 'Events ', timeline.count), h('span', { class: 'muted small', text: 'from the event log, in runSeq order' })),
      timeline.el));

  if (navigator.clipboard && window.isSecureContext) {
    copy.addEventListener('click', () => navigator.clipboard.writeText(runId).then(
      () => view.toast({ kind: 'success', text: 'Run id copied' }), () => {}));
  } else {
    copy.hidden = true;
  }

  // send posts one signal and reports the answer in the toast.
  async function send(signalName, payload, button) {
    button.disabled = true;
    button.classList.add('is-busy');
    try {
      const res = await sendSignal(runId, signalName, payload);
      view.toast({ kind: 'success', text: `${res.signalName || signalName} accepted${res.duplicate ? ' (duplicate)' : ''}` });
    } catch (err) {
      if (ac.signal.aborted) return;
      view.toast({ kind: 'error', text: err instanceof ApiError ? err.describe() : String(err) });
    } finally {
      button.classList.remove('is-busy');
      if (!Object.values(buttons).includes(button)) button.disabled = false;
      else if (snap) drawActions(snap);
    }
  }

  buttons.PAUSE.addEventListener('click', () => send('PAUSE', undefined, buttons.PAUSE));
  buttons.RESUME.addEventListener('click', () => send('RESUME', undefined, buttons.RESUME));
  buttons.CANCEL.addEventListener('click', async () => {
    const ok = await view.confirm({
      title: 'Cancel this run?',
      text: 'Running steps are asked to stop and no further step starts. A cancelled run cannot be resumed.',
      ok: 'Cancel run',
      dismiss: 'Keep running',
    });
    if (ok) send('CANCEL', undefined, buttons.CANCEL);
  });
  const stepActions = {
    retry: (stepId, button) => send('RETRY_STEP', { stepId }, button),
    signal: (name, _stepId, button) => send(name, undefined, button),
    details: (stepId) => panel.select(stepId),
    selected: () => panel.selected(),
    rerun: (stepId) => rerun.open(stepId, snap),
    mayRerun: () => Boolean(snap) && mayRerun(me, snap.status),
  };
  // Without whoami's answer the steps offer no rerun.
  whoami().then((who) => {
    me = who;
    if (snap && !ac.signal.aborted) dag.update(snap, stepActions);
    drawRerun();
  }, () => {});
  // Opening or closing a step redraws the graph to mark the step shown,
  // and keeps the step in the address.
  panel.onSelect((stepId) => {
    if (snap) dag.update(snap, stepActions);
    const url = new URL(location.href);
    if (stepId) url.searchParams.set('step', stepId);
    else url.searchParams.delete('step');
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
  });

  // drawRerun says on the steps card whether its steps offer a rerun, and
  // names the run a rerun reruns in the header.
  function drawRerun() {
    if (me) stepsCard.dataset.rerun = String(stepActions.mayRerun());
    const shown = JSON.stringify(snap?.rerunOf || null);
    if (shown === rerunOfShown) return;
    rerunOfShown = shown;
    replace(rerunOf, rerunOfMark(snap?.rerunOf));
  }

  function drawActions(s) {
    const busy = (b) => b.classList.contains('is-busy');
    for (const [name, b] of Object.entries(buttons)) {
      const can = runSignal(name, s.status);
      b.disabled = busy(b) || !can.ok;
      b.title = can.why;
    }
  }

  // apply draws a new snapshot.
  function apply(s) {
    snap = s;
    problem.hidden = true;
    replace(pills, pill(s.status, 'run-status'), s.stale ? stalePill() : null, depthChip(s.parent));
    drawActions(s);
    drawBanner(s);
    drawFailure(s);
    drawQueued(s);
    drawMeta(s);
    drawData(s);
    dag.update(s, stepActions);
    panel.update(s);
    waterfall.update(s, (stepId) => panel.select(stepId));
    drawStepsSummary(s);
    drawFamily(s);
    drawRerun();
    timeline.sync();
    if (opened) panel.select(opened);
    opened = null;
  }

  // drawFamily links a child run to its parent in the breadcrumb, and a
  // run with subPlan steps to its child runs (the runs list, /?parent=).
  function drawFamily(s) {
    childrenLink.hidden = !hasSubPlans(s.plan?.steps);
    const shown = JSON.stringify(s.parent || null);
    if (shown === parentShown) return;
    parentShown = shown;
    replace(parentSlot, parentCrumbs(s.parent));
  }

  // drawData shows the run's input and output; it redraws only when they
  // change, so a reader's open or whole value stays as it was.
  function drawData(s) {
    const shown = JSON.stringify([s.input, s.output]);
    if (shown === dataShown) return;
    dataShown = shown;
    data.hidden = s.input === undefined && s.output === undefined;
    const none = (testid, text) => h('div', { class: 'muted small', testid, text });
    replace(data,
      h('div', { class: 'card-head' }, h('h2', { text: 'Data' }), h('span', { class: 'muted small', text: "the run's input, and its output once it completed" })),
      h('div', { class: 'json-pair run-data-body' },
        s.input !== undefined ? jsonBlock('Input', s.input, 'run-input', dataStates.input) : none('run-input-none', 'No input.'),
        s.output !== undefined ? jsonBlock('Output', s.output, 'run-output', dataStates.output) : none('run-output-none', isTerminal(s.status) ? 'No output.' : 'No output yet.')));
  }

  // drawStepsSummary counts the steps by status: "2 succeeded · 1 failed · 3 not started".
  function drawStepsSummary(s) {
    const steps = topSteps(Array.isArray(s.steps) ? s.steps : []);
    const seen = new Set(steps.map((st) => st.stepId));
    const notStarted = (Array.isArray(s.plan?.steps) ? s.plan.steps : []).filter((p) => !seen.has(p.id)).length;
    const count = (status) => steps.filter((st) => st.status === status).length;
    const parts = [
      [count('SUCCESS'), 'succeeded'], [count('RUNNING'), 'running'], [count('FAILED'), 'failed'],
      [count('SKIPPED'), 'skipped'], [count('CANCELLED'), 'cancelled'], [count('PENDING') + notStarted, 'pending'],
    ].filter(([n]) => n > 0).map(([n, label]) => `${n} ${label}`);
    stepsSummary.textContent = parts.join(' · ');
  }

  function drawBanner(s) {
    banner.hidden = !s.stale;
    if (!s.stale) {
      banner.replaceChildren();
      return;
    }
    const gap = s.gap || {};
    replace(banner,
      h('div', { class: 'stale-icon' }, icon('alert')),
      h('div', {},
        h('strong', { text: 'STALE — this view is halted at a gap in the event log' }),
        h('p', {},
          'The projection applied events up to runSeq ', h('b', { class: 'mono', testid: 'gap-after', text: gap.afterSeq ?? '?' }),
          ' but has seen runSeq ', h('b', { class: 'mono', testid: 'gap-seen', text: gap.seenSeq ?? '?' }),
          '. Nothing after the gap is shown until the missing events arrive',
          gap.since ? ` (gap detected ${relativeTime(new Date(gap.since))}, ${dateTime(gap.since)}).` : '.')));
  }

  // drawQueued says why a QUEUED run waits: its admission limit's reason
  // (RunSnapshot.queued, cleared when the run starts).
  function drawQueued(s) {
    queued.hidden = s.status !== 'QUEUED';
    if (queued.hidden) return;
    const q = s.queued || {};
    replace(queued,
      h('strong', { text: 'Queued' }),
      ' — waiting for its environment to admit it: ',
      h('span', { testid: 'run-queued-reason', text: q.reason || 'no reason given' }),
      q.since ? h('span', { class: 'muted', title: dateTime(q.since), text: ` (since ${relativeTime(new Date(q.since))})` }) : null);
  }

  function drawFailure(s) {
    const e = s.error;
    failure.hidden = !(s.status === 'FAILED' && e);
    if (failure.hidden) return;
    replace(failure,
      h('div', { class: 'run-error-icon' }, icon('alert')),
      h('div', {},
        h('div', { class: 'run-error-title', text: 'Run failed' }),
        h('div', {}, h('code', { class: 'run-error-code', text: e.code || 'ERROR' }), ' ', h('span', { text: e.message || '' })),
        e.category || e.retryable !== undefined
          ? h('div', { class: 'muted small', text: [e.category, e.retryable ? 'retryable' : 'not retryable'].filter(Boolean).join(' · ') })
          : null));
  }

  function drawMeta(s) {
    const running = s.totalDurationMs == null && s.startedAt && !isTerminal(s.status);
    const total = s.totalDurationMs ?? (running ? between(s.startedAt) : null);
    const part = (label, value, cls) => h('span', { class: 'scope-part' },
      h('span', { class: 'scope-label', text: label }), h('span', { class: cls || 'scope-value', text: value || '—' }));
    replace(scope,
      h('span', { class: 'scope-part' }, h('span', { class: 'scope-label', text: 'plan' }),
        h('span', { class: 'plan-id', text: s.planId || '—' }),
        s.planVersion ? h('span', { class: 'plan-version', text: `@${s.planVersion}` }) : null),
      part('tenant', s.tenantId),
      part('project', s.projectId),
      part('env', s.environmentId));

    const item = (label, value, extra = {}) => h('div', { class: 'meta-item' }, h('dt', { text: label }), h('dd', extra, value));
    const planSteps = Array.isArray(s.plan?.steps) ? s.plan.steps.length : 0;
    const steps = topSteps(Array.isArray(s.steps) ? s.steps : []);
    const done = steps.filter((st) => st.status === 'SUCCESS' || st.status === 'SKIPPED').length;
    replace(meta,
      item('Created', relativeOrDash(s.createdAt), { title: dateTime(s.createdAt) }),
      item('Started', s.startedAt ? dateTime(s.startedAt) : 'not yet'),
      item('Completed', s.completedAt ? dateTime(s.completedAt) : '—'),
      item('Duration', duration(total), { class: running ? 'is-live' : null, 'data-started': running ? s.startedAt : null }),
      item('Steps', `${done} / ${Math.max(planSteps, steps.length)} done${s.failedSteps ? ` · ${s.failedSteps} failed` : ''}`),
      item('Projection lag', s.lagMs == null ? '—' : duration(s.lagMs), { testid: 'lag' }),
      item('Last event', s.lastEventSeq == null ? '—' : `runSeq ${s.lastEventSeq}`));
  }

  // live keeps the snapshot current: one plain GET (with If-None-Match once
  // an ETag is known), then long polls for lastEventSeq + 1; after an error,
  // a 1 s pause and a plain GET again.
  async function live() {
    let plain = true;
    let missing = false; // the run answered 404: the not-found view is up
    while (!ac.signal.aborted) {
      const started = Date.now();
      // steps=top: a forEach step's children come a page at a time from
      // the step panel, not with every snapshot.
      const path = plain || !snap
        ? `${runPath(runId)}?steps=top`
        : `${runPath(runId)}?steps=top&waitForSeq=${(snap.lastEventSeq || 0) + 1}&timeout=${LONG_POLL}`;
      try {
        const signal = AbortSignal.any([ac.signal, AbortSignal.timeout(CLIENT_TIMEOUT_MS)]);
        const res = await get(path, { etag, signal });
        let advanced = false;
        if (res.status !== 304 && res.data) {
          const prev = snap;
          advanced = !prev || res.data.lastEventSeq !== prev.lastEventSeq || res.data.stale !== prev.stale;
          if (!prev || !res.etag || res.etag !== etag) apply(res.data);
          etag = res.etag;
        }
        if (missing) {
          view.navigate(location.pathname + location.search + location.hash, { replace: true });
          return;
        }
        plain = false;
        view.setLive('live');
        // A server that answers at once without news must not make a hot loop.
        if (!advanced && Date.now() - started < BACKOFF_MS) await pause(BACKOFF_MS);
      } catch (err) {
        if (ac.signal.aborted) return;
        if (err.status === 401) return; // The app shows the sign-in form.
        if (err.status === 400 || err.status === 403) {
          notFound(err);
          return;
        }
        if (err.status === 404) {
          // The read side trails the gateway: a run started a moment ago
          // may not be projected yet. Keep asking while the page is open,
          // and draw the whole page once it is there.
          if (!missing) notFound(err);
          missing = true;
          await pause(NOT_FOUND_RETRY_MS);
          continue;
        }
        view.setLive('error');
        if (!snap) showProblem(err);
        plain = true;
        await pause(BACKOFF_MS);
      }
    }
  }

  function showProblem(err) {
    problem.hidden = false;
    replace(problem, icon('alert'), `Could not load the run — ${err.describe ? err.describe() : err.message}. Retrying…`);
  }

  function notFound(err) {
    view.setLive(null);
    replace(root,
      h('nav', { class: 'crumbs' }, h('a', { href: '/', 'data-nav': true, text: 'Runs' })),
      h('div', { class: 'empty-page', testid: 'run-not-found' },
        h('h1', { text: 'Run not found' }),
        h('p', { class: 'muted' }, 'No run ', h('code', { text: runId }), ' is visible to this API key. A run started a moment ago appears here by itself.'),
        h('p', { class: 'muted small', text: err.describe() })));
  }

  // pause waits ms, or less when the page is left.
  function pause(ms) {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        ac.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      ac.signal.addEventListener('abort', done);
    });
  }

  // Live durations tick every second between snapshots.
  const clockTimer = setInterval(() => {
    for (const el of root.querySelectorAll('.is-live[data-started]')) {
      el.textContent = duration(between(el.dataset.started));
    }
  }, 1000);

  live();

  return {
    unmount() {
      ac.abort();
      clearInterval(clockTimer);
      dag.destroy();
    },
  };
}

function relativeOrDash(value) {
  return value ? relativeTime(new Date(value)) : '—';
}
