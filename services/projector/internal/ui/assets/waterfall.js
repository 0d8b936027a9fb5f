// The run page's waterfall: every attempt of every step on one time axis,
// as the run's events record them. A row per top-level step, a bar per
// phase of each logical attempt: queued (scheduled, not started), running
// (or, for a waitSignal step, waiting for its signal), and the retry
// backoff between a failed attempt and the next; the run's own row shows
// it approved or queued before its start, running, and paused.
//
// It folds the events the event timeline already reads (one pass over
// each event, no request of its own). A forEach step is one row spanning
// its children, summarized; the first CHILD_ROWS children are kept in
// detail and drawn under it on demand, so a fan-out of any size costs a
// constant number of rows and of kept attempts.

import { h, replace } from './dom.js';
import { parseTime, clock, duration } from './format.js';
import { parseChildId } from './stepdetail.js';

// CHILD_ROWS is how many children of a forEach step can be drawn, in index
// order, under its row.
export const CHILD_ROWS = 20;
// TICKS is how many intervals the time axis is cut into.
const TICKS = 4;

const ENDS = {
  StepCompleted: 'SUCCESS', StepFailed: 'FAILED', StepSkipped: 'SKIPPED', StepCancelled: 'CANCELLED',
};
const RUN_ENDS = new Set(['RunCompleted', 'RunFailed', 'RunCancelled']);

// newTrace is the folded history of one step: its logical attempts by id,
// in the order they appeared.
function newTrace(id) {
  return { id, attempts: new Map() };
}

// attemptOf returns the trace's attempt logical, made when first seen.
function attemptOf(trace, logical) {
  const key = logical || '1';
  let a = trace.attempts.get(key);
  if (!a) {
    a = { logical: key, scheduled: null, started: null, ended: null, status: null, deliveries: 0, retryFrom: null };
    trace.attempts.set(key, a);
  }
  return a;
}

// foldStep applies one step event to trace, at time t.
function foldStep(trace, ev, t) {
  const type = ev.eventType;
  const a = attemptOf(trace, ev.logicalAttemptId);
  if (type === 'StepScheduled') {
    a.scheduled ??= t;
  } else if (type === 'StepStarted') {
    a.deliveries++;
    a.started ??= parseTime(ev.eventData?.startedAt) || t;
    a.status ??= 'RUNNING';
  } else if (ENDS[type]) {
    if (!a.ended) {
      a.ended = t;
      a.status = ENDS[type];
    }
  } else if (type === 'StepRetryScheduled') {
    a.retryFrom = a.ended || t;
  }
}

// createWaterfall returns {el, add(events), update(snapshot, open)}: add
// folds a page of the run's events, update draws with the snapshot's plan
// and status; open(stepId) is called when a step's name is clicked.
export function createWaterfall() {
  const body = h('div', { class: 'wf-body' });
  const el = h('div', { class: 'waterfall', testid: 'waterfall' }, body);
  const run = { approved: null, queued: null, queuedWhy: '', started: null, ended: null, pauses: [] };
  const steps = new Map(); // top-level step id → trace
  const fans = new Map(); // forEach step id → {seen, first, last, kids: Map(index → trace)}
  const expanded = new Set();
  let snap = null;
  let open = () => {};

  function add(list) {
    for (const ev of list) {
      const t = parseTime(ev.emittedAt) || parseTime(ev.persistedAt);
      if (!t) continue;
      if (!ev.stepId) {
        foldRun(ev, t);
        continue;
      }
      const child = parseChildId(ev.stepId);
      if (child) {
        foldChild(child, ev, t);
        continue;
      }
      if (!steps.has(ev.stepId)) steps.set(ev.stepId, newTrace(ev.stepId));
      foldStep(steps.get(ev.stepId), ev, t);
    }
    draw();
  }

  function foldRun(ev, t) {
    const type = ev.eventType;
    if (type === 'RunApproved') run.approved ??= t;
    else if (type === 'RunQueued' && !run.queued) {
      run.queued = t;
      run.queuedWhy = ev.eventData?.reason || '';
    }
    else if (type === 'RunStarted') run.started ??= t;
    else if (type === 'RunPaused') run.pauses.push({ from: t, to: null });
    else if (type === 'RunResumed') {
      const p = run.pauses.at(-1);
      if (p && !p.to) p.to = t;
      run.ended = null; // a RETRY_STEP reopens a FAILED run
    } else if (RUN_ENDS.has(type)) {
      run.ended = t;
      for (const tr of allTraces()) {
        for (const a of tr.attempts.values()) {
          if (!a.ended && type === 'RunCancelled') {
            a.ended = t;
            a.status = 'CANCELLED';
          }
        }
      }
    }
  }

  function foldChild(child, ev, t) {
    let f = fans.get(child.parent);
    if (!f) {
      f = { seen: new Set(), first: null, last: null, kids: new Map() };
      fans.set(child.parent, f);
    }
    f.seen.add(child.index);
    if (!f.first || t < f.first) f.first = t;
    if (!f.last || t > f.last) f.last = t;
    if (child.index >= CHILD_ROWS) return;
    if (!f.kids.has(child.index)) f.kids.set(child.index, newTrace(ev.stepId));
    foldStep(f.kids.get(child.index), ev, t);
  }

  function* allTraces() {
    yield* steps.values();
    for (const f of fans.values()) yield* f.kids.values();
  }

  function update(s, onOpen) {
    snap = s;
    open = onOpen || open;
    draw();
  }

  // draw lays every row out on the axis [t0, t1]: from the run's approval
  // to its end, or to now while it runs.
  function draw() {
    if (!snap) return;
    const now = new Date();
    const t0 = run.approved || parseTime(snap.createdAt) || firstTime() || now;
    const t1 = run.ended || now; // an attempt left open by the run's end ends with it
    const span = Math.max(1, t1 - t0);
    const at = (t) => Math.min(100, Math.max(0, ((t - t0) / span) * 100));
    const bar = (from, to, kind, testid, title, extra = {}) => {
      const end = to || t1;
      const live = !to && !run.ended;
      const b = h('span', { class: `wf-bar wf-${kind}${live ? ' is-open' : ''}`, testid, 'data-kind': kind, title: `${title} · ${clock(from)} → ${live ? 'now' : clock(end)} (${duration(end - from)})`, ...extra });
      // CSSOM, not a style attribute: the page's CSP (style-src 'self') allows it.
      b.style.left = `${at(from)}%`;
      b.style.width = `${Math.max(0, at(end) - at(from))}%`;
      return b;
    };

    const rows = [axis(t0, span), runRow(bar)];
    const planIds = Array.isArray(snap.plan?.steps) ? snap.plan.steps.map((p) => p.id) : [];
    const ids = [...new Set([...planIds, ...steps.keys(), ...fans.keys()])];
    const kinds = new Map((snap.plan?.steps || []).map((p) => [p.id, p.kind]));
    for (const id of ids) {
      const fan = fans.get(id);
      rows.push(stepRow(id, steps.get(id), kinds.get(id) === 'waitSignal', bar, fan));
      if (fan && expanded.has(id)) {
        for (const index of [...fan.kids.keys()].sort((x, y) => x - y)) {
          rows.push(stepRow(fan.kids.get(index).id, fan.kids.get(index), false, bar, null, true));
        }
      }
    }
    replace(body, rows);
  }

  function firstTime() {
    let first = null;
    for (const tr of allTraces()) for (const a of tr.attempts.values()) {
      const t = a.scheduled || a.started;
      if (t && (!first || t < first)) first = t;
    }
    return first;
  }

  function axis(t0, span) {
    const ticks = [];
    for (let i = 0; i <= TICKS; i++) {
      const t = h('span', { class: 'wf-tick', text: i === 0 ? clock(t0) : `+${duration((span * i) / TICKS)}` });
      t.style.left = `${(100 * i) / TICKS}%`;
      ticks.push(t);
    }
    return h('div', { class: 'wf-row wf-axis', 'aria-hidden': 'true' }, h('div', { class: 'wf-label' }), h('div', { class: 'wf-track' }, ticks));
  }

  function runRow(bar) {
    const bars = [];
    const start = run.approved || run.queued;
    if (start && (run.started || !run.ended)) {
      const queued = !!run.queued;
      const why = queued ? `queued: ${run.queuedWhy || 'held by its admission limit'}` : 'approved, not started';
      bars.push(bar(start, run.started || run.ended, queued ? 'queued' : 'pending', 'wf-bar', why));
    }
    if (run.started) bars.push(bar(run.started, run.ended, 'run', 'wf-bar', `run ${snap.status || ''}`.trim()));
    for (const p of run.pauses) bars.push(bar(p.from, p.to || run.ended, 'paused', 'wf-bar', 'paused'));
    return h('div', { class: 'wf-row wf-row-run', testid: 'wf-row', 'data-step-id': '' },
      h('div', { class: 'wf-label' }, h('strong', { text: 'run' })), h('div', { class: 'wf-track' }, bars));
  }

  function stepRow(id, trace, waits, bar, fan, child = false) {
    const bars = [];
    for (const a of trace ? trace.attempts.values() : []) {
      const n = { 'data-attempt': a.logical };
      if (a.scheduled && (a.started || !a.ended)) bars.push(bar(a.scheduled, a.started || a.ended, 'queued', 'wf-bar', `attempt ${a.logical} queued for a worker`, n));
      if (a.started) {
        const kind = waits ? 'waiting' : 'running';
        const what = waits ? 'waiting for its signal' : `running${a.deliveries > 1 ? `, ${a.deliveries} deliveries` : ''}`;
        bars.push(bar(a.started, a.ended, kind, 'wf-bar', `attempt ${a.logical} ${what}${a.status && a.status !== 'RUNNING' ? ` → ${a.status}` : ''}`,
          { ...n, 'data-status': a.status || 'RUNNING' }));
        bars.at(-1).classList.add(`wf-end-${(a.status || 'RUNNING').toLowerCase()}`);
      } else if (a.ended) {
        bars.push(bar(a.ended, a.ended, 'mark', 'wf-bar', `attempt ${a.logical} ${a.status.toLowerCase()} without running`, { ...n, 'data-status': a.status }));
      }
      if (a.retryFrom) {
        const next = [...trace.attempts.values()].find((b) => Number(b.logical) > Number(a.logical));
        const why = a.status === 'FAILED' ? 'failed: retry backoff' : `${String(a.status || '').toLowerCase()}: until it was brought back`;
        bars.push(bar(a.retryFrom, next?.scheduled || next?.started || next?.ended || null, 'retry', 'wf-bar', `attempt ${a.logical} ${why}`, n));
      }
    }
    let note = null;
    if (fan) {
      if (fan.first) bars.unshift(bar(fan.first, fan.last, 'children', 'wf-bar', `${fan.seen.size} elements, from the first scheduled to the last event`));
      const count = snap.steps?.find((st) => st.stepId === id)?.forEach?.count;
      const toggle = h('button', { type: 'button', class: 'linklike small', testid: 'wf-children-toggle', 'data-step-id': id,
        text: expanded.has(id) ? 'hide' : `show the first ${Math.min(CHILD_ROWS, fan.kids.size)}` });
      toggle.addEventListener('click', () => {
        if (expanded.has(id)) expanded.delete(id);
        else expanded.add(id);
        draw();
      });
      note = h('span', { class: 'wf-note' },
        h('span', { testid: 'wf-children', text: `${fan.seen.size}${count ? ` of ${count}` : ''} elements` }), ' · ', toggle);
    }
    const name = h('button', { type: 'button', class: 'linklike wf-name', title: id, text: child ? `[${parseChildId(id)?.index}]` : id });
    name.addEventListener('click', () => open(id));
    return h('div', { class: `wf-row${child ? ' wf-child' : ''}`, testid: 'wf-row', 'data-step-id': id },
      h('div', { class: 'wf-label' }, name, note), h('div', { class: 'wf-track' }, bars));
  }

  return { el, add, update };
}

// waterfallLegend names the kinds of bar.
export function waterfallLegend() {
  const kinds = [['queued', 'queued'], ['running', 'running'], ['waiting', 'waiting for a signal'], ['retry', 'retry backoff'], ['paused', 'paused'], ['failed', 'failed']];
  return h('div', { class: 'wf-legend muted small' }, kinds.map(([k, label]) =>
    h('span', { class: 'wf-key' }, h('span', { class: `wf-swatch wf-${k}` }), label)));
}
