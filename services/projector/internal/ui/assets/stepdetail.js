// The step panel of the run page: one step's detail (GET
// /v1/runs/{runId}/steps/{stepId}): why it was skipped, its input and
// output, its attempt history, for a subPlan step the child run it
// started, and for a forEach step its children (GET …/children, a page at
// a time: the run's snapshot comes without them), which open in the same
// panel. The detail is read again whenever the
// step's snapshot changes while it is shown; a child's, whenever the run's
// does.

import { get, runPath } from './api.js';
import { childRunDetail, childRunLink, isSubPlan } from './childruns.js';
import { h, icon, pill, replace } from './dom.js';
import { between, dateTime, duration } from './format.js';
import { jsonBlock } from './jsonview.js';

// CHILD_PAGE is how many children of a forEach step are listed at a time.
const CHILD_PAGE = 50;
// CHILD_MAX is the most children listed at once: the read API's largest
// page of children (its MaxChildrenPage, 1,000 by default).
const CHILD_MAX = 1000;

// parseChildId splits a forEach child's step id "parent[index]" into
// {parent, index}; null for any other id (events.ParseChildStepID).
export function parseChildId(id) {
  const m = /^(.+)\[(0|[1-9][0-9]*)\]$/.exec(String(id ?? ''));
  return m ? { parent: m[1], index: Number(m[2]) } : null;
}

// topSteps returns the steps that are not children of a forEach step of
// the same snapshot: a forEach step is one node, its children are opened
// from it (RunSnapshot.TopSteps).
export function topSteps(steps) {
  const fanOut = new Set(steps.filter((st) => st.forEach).map((st) => st.stepId));
  if (fanOut.size === 0) return steps;
  return steps.filter((st) => !fanOut.has(parseChildId(st.stepId)?.parent));
}

// progressText renders a forEach step's progress: "3 done · 1 running · 0 failed of 10".
export function progressText(f) {
  return `${f.done || 0} done · ${f.running || 0} running · ${f.failed || 0} failed of ${f.count || 0}`;
}

// createStepPanel returns {el, select(stepId), update(snapshot), selected()}.
export function createStepPanel(runId, signal) {
  const el = h('section', { class: 'card step-panel', testid: 'step-panel', hidden: true });
  let snap = null;
  let stepId = null;
  let detail = null;
  let fetchedFor = null; // the snapshot signature the detail was read for
  let error = null;
  let shown = CHILD_PAGE;
  let kids = { list: [], more: false, loaded: false }; // the shown step's children, the first `shown`
  let onSelect = () => {};
  const states = new Map(); // "stepId:field" → the JSON block's open/full state

  const stepOf = (id) => (Array.isArray(snap?.steps) ? snap.steps.find((st) => st.stepId === id) : undefined)
    || kids.list.find((st) => st.stepId === id);
  // signature says when a step's detail may have changed: its snapshot,
  // or for a child (which the run's snapshot leaves out) the run's.
  const signature = (id) => {
    const st = Array.isArray(snap?.steps) ? snap.steps.find((x) => x.stepId === id) : undefined;
    if (!st) return parseChildId(id) ? `run ${snap?.lastEventSeq}` : '';
    return [st.status, st.logicalAttemptId, st.engineAttemptId, st.attempts, st.completedAt, JSON.stringify(st.forEach || null)].join('|');
  };
  // planStepOf is the plan step of step id, a forEach child's being its
  // parent's.
  const planStepOf = (id) => {
    const planId = parseChildId(id)?.parent ?? id;
    return (Array.isArray(snap?.plan?.steps) ? snap.plan.steps : []).find((p) => p.id === planId);
  };
  const state = (field) => {
    const key = `${stepId}:${field}`;
    if (!states.has(key)) states.set(key, {});
    return states.get(key);
  };

  async function load() {
    const id = stepId;
    fetchedFor = signature(id);
    const path = `${runPath(runId)}/steps/${encodeURIComponent(id)}`;
    try {
      const [res, page] = await Promise.all([
        get(path, { signal }),
        stepOf(id)?.forEach ? get(`${path}/children?limit=${shown}`, { signal }) : null]);
      if (id !== stepId) return;
      detail = res.data;
      if (page) kids = { list: page.data?.children || [], more: !!page.data?.more, loaded: true };
      error = null;
    } catch (err) {
      if (signal.aborted || id !== stepId) return;
      error = err;
      fetchedFor = null; // try again at the next snapshot
    }
    draw();
  }

  function select(id) {
    if (id === stepId) return;
    stepId = id;
    detail = null;
    error = null;
    shown = CHILD_PAGE;
    if (!parseChildId(id)) kids = { list: [], more: false, loaded: false }; // a child's parent keeps its page
    onSelect(id);
    draw();
    load();
    el.scrollIntoView({ block: 'nearest' });
  }

  function close() {
    stepId = null;
    detail = null;
    onSelect(null);
    el.hidden = true;
  }

  function update(s) {
    snap = s;
    if (!stepId) return;
    if (signature(stepId) !== fetchedFor) load();
    draw();
  }

  function draw() {
    el.hidden = !stepId;
    if (!stepId) return;
    const st = stepOf(stepId);
    const child = parseChildId(stepId);
    // A child's status is its latest attempt's: the page of children it
    // came from is not read again at every event.
    const status = (child && detail?.attempts?.at(-1)?.status) || st?.status;
    const closer = h('button', { type: 'button', class: 'btn btn-ghost btn-icon', testid: 'step-panel-close', title: 'Close', 'aria-label': 'Close' }, icon('x'));
    closer.addEventListener('click', close);
    let up = null;
    if (child && stepOf(child.parent)?.forEach) {
      up = h('button', { type: 'button', class: 'linklike', testid: 'step-panel-parent' }, `← element ${child.index} of `, h('code', { text: child.parent }));
      up.addEventListener('click', () => select(child.parent));
    }
    replace(el,
      h('div', { class: 'card-head' },
        h('h2', {}, 'Step ', h('code', { testid: 'step-panel-id', text: stepId })),
        status ? pill(status, 'step-panel-status') : h('span', { class: 'chip chip-quiet', text: 'not started' }),
        h('span', { class: 'grow' }), closer),
      h('div', { class: 'step-panel-body' },
        up,
        error ? h('div', { class: 'inline-error', role: 'alert', testid: 'step-panel-error' }, icon('alert'),
          `Could not load the step — ${error.describe ? error.describe() : error.message}`) : null,
        !detail && !error ? h('div', { class: 'muted small', text: 'Loading…' }) : null,
        detail ? body(detail, st) : null));
  }

  function body(d, st) {
    const skip = d.skip || (st?.status === 'SKIPPED' && st.error ? { reason: st.error.message } : null);
    const inputNote = { resolved: 'Resolved when the attempt was scheduled.', plan: "The plan's static input." }[d.inputSource] || null;
    return [
      skip ? h('div', { class: 'node-error is-quiet', testid: 'detail-skip' },
        h('span', { class: 'node-error-label', text: 'Skipped' }),
        h('code', { class: 'node-error-code', testid: 'detail-skip-reason', text: skip.reason || 'SKIPPED' }),
        skip.condition ? h('span', { class: 'node-error-msg' }, ' the condition (if) of step ', h('code', { text: skip.condition }), ' was false') : null) : null,
      st?.forEach ? children(st) : null,
      // A forEach child's snapshot is known once its page of children is.
      isSubPlan(planStepOf(stepId)) && !st?.forEach && (st || !parseChildId(stepId)) ? childRunDetail(st) : null,
      h('h3', { class: 'panel-sub', text: 'Data' }),
      h('div', { class: 'json-pair' },
        d.input !== undefined
          ? jsonBlock(d.forEach ? 'Input (the list)' : 'Input', d.input, 'detail-input', state('input'), inputNote)
          : h('div', { class: 'muted small', testid: 'detail-input-none', text: 'No input: the step did not run.' }),
        d.output !== undefined
          ? jsonBlock('Output', d.output, 'detail-output', state('output'))
          : h('div', { class: 'muted small', testid: 'detail-output-none', text: noOutput(skip ? 'SKIPPED' : st?.status || d.attempts?.at(-1)?.status) })),
      h('h3', { class: 'panel-sub', text: 'Attempts' }),
      attempts(Array.isArray(d.attempts) ? d.attempts : []),
    ];
  }

  function children(parent) {
    const f = parent.forEach;
    const subPlan = isSubPlan(planStepOf(parent.stepId));
    const rows = kids.list.map((st) => ({ st, c: parseChildId(st.stepId) })).map(({ st, c }) => {
      const open = h('button', { type: 'button', class: 'btn btn-sm', testid: 'foreach-child-open', 'data-step-id': st.stepId, text: 'Open' });
      open.addEventListener('click', () => select(st.stepId));
      return h('tr', { testid: 'foreach-child', 'data-step-id': st.stepId },
        h('td', { class: 'num mono', text: String(c.index) }),
        h('td', {}, pill(st.status, 'foreach-child-status')),
        h('td', { class: 'muted small', text: st.startedAt ? duration(between(st.startedAt, st.completedAt)) : '—' }),
        h('td', { class: 'small' }, st.error ? h('code', { text: st.error.code || '' }) : null),
        subPlan ? h('td', { class: 'small' }, childRunLink(st.childRunId, 'foreach-child-run')) : null,
        h('td', {}, open));
    });
    let more = null;
    if (kids.more && shown < CHILD_MAX) {
      more = h('button', { type: 'button', class: 'btn btn-sm', testid: 'foreach-more', text: `Show ${CHILD_PAGE} more` });
      more.addEventListener('click', () => {
        more.disabled = true;
        shown = Math.min(shown + CHILD_PAGE, CHILD_MAX);
        load();
      });
    } else if (kids.more) {
      more = h('div', { class: 'muted small', testid: 'foreach-capped', text: `The first ${CHILD_MAX} are listed.` });
    }
    // Once every scheduled child is listed, the rest are not scheduled yet.
    const waiting = kids.loaded && !kids.more ? Math.max(0, (f.count || 0) - kids.list.length) : 0;
    return h('div', { class: 'foreach', testid: 'detail-foreach' },
      h('div', { class: 'foreach-head' },
        h('strong', { testid: 'detail-foreach-progress', text: progressText(f) }),
        h('span', { class: 'muted small', text: ` · at most ${f.maxParallel || 0} at once${f.failFast ? ' · stops at the first failure' : ''}` })),
      h('div', { class: 'table-scroll foreach-scroll' }, h('table', { class: 'table compact', testid: 'foreach-children' },
        h('thead', {}, h('tr', {}, h('th', { class: 'num', text: 'Element' }), h('th', { text: 'Status' }), h('th', { text: 'Took' }), h('th', { text: 'Error' }),
          subPlan ? h('th', { text: 'Child run' }) : null, h('th', { text: '' }))),
        h('tbody', {}, rows))),
      more,
      waiting ? h('div', { class: 'muted small', testid: 'foreach-waiting', text: `${waiting} not scheduled yet` }) : null);
  }

  return { el, select, update, selected: () => stepId, onSelect: (fn) => { onSelect = fn; } };
}

// noOutput says why a step in status has no output: only a step that may
// still run reads "yet".
function noOutput(status) {
  switch (status) {
    case 'SKIPPED': return 'No output: the step was skipped.';
    case 'FAILED': return 'No output: the step failed.';
    case 'CANCELLED': return 'No output: the step was cancelled.';
    case 'SUCCESS': return 'No output: the step returned none.';
    default: return 'No output yet.';
  }
}

// attempts renders the attempt history: one row per logical attempt.
function attempts(list) {
  if (list.length === 0) return h('div', { class: 'muted small', testid: 'detail-attempts-none', text: 'No attempt yet.' });
  const when = (t) => (t ? dateTime(t) : '—');
  return h('div', { class: 'table-scroll' }, h('table', { class: 'table compact', testid: 'detail-attempts' },
    h('thead', {}, h('tr', {},
      h('th', { class: 'num', text: 'Attempt' }), h('th', { text: 'Status' }), h('th', { text: 'Scheduled' }),
      h('th', { text: 'Started' }), h('th', { text: 'Ended' }), h('th', { text: 'Worker' }), h('th', { text: 'Error' }))),
    h('tbody', {}, list.map((a) => h('tr', { testid: 'attempt-row', 'data-attempt': a.logicalAttemptId },
      h('td', { class: 'num mono', title: a.deliveries > 1 ? `${a.deliveries} deliveries` : null,
        text: `${a.logicalAttemptId || '?'}${a.deliveries > 1 ? ` ×${a.deliveries}` : ''}` }),
      h('td', {}, pill(a.status, 'attempt-status')),
      h('td', { class: 'small', testid: 'attempt-scheduled', text: when(a.scheduledAt) }),
      h('td', { class: 'small', testid: 'attempt-started', text: when(a.startedAt) }),
      h('td', { class: 'small', testid: 'attempt-completed', text: when(a.completedAt) }),
      h('td', { class: 'mono small', testid: 'attempt-worker', text: a.workerId || '—' }),
      h('td', { class: 'small', testid: 'attempt-error' },
        a.error ? [h('code', { text: a.error.code || 'ERROR' }), ' ', a.error.message || ''] : '—',
        a.retryAt ? h('div', { class: 'muted', text: `retried at ${dateTime(a.retryAt)}` }) : null))))));
}
