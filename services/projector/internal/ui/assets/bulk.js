// Bulk actions on the runs list, for a key that may send signals
// (signal.send, GET /v1/whoami; Rerun also needs run.start): a checkbox
// per row, a select-all for the rows shown, and an action bar. An action
// on the selected runs goes run by run through the run page's paths: one
// signal per run (POST /gateway/v1/runs/{runId}/signals; Retry failed
// steps one RETRY_STEP per FAILED step), or a rerun from the run's first
// FAILED step (POST /gateway/v1/runs/{runId}/rerun). Every id sent is
// derived from one id generated for the click, kept while an attempt has
// failed, so clicking again on the same selection signals no run twice.
// A run whose status makes the action pointless is skipped, with why.
// "Act on all matching" starts a bulk job over the list's filters
// (bulkjob.js). A key without signal.send sees neither.
//
// Test ids: bulk-bar (data-allowed "unknown" until GET /v1/whoami
// answered, then "true" or "false"), bulk-select (a row's checkbox,
// data-run-id), bulk-select-all, bulk-selection-count, bulk-action
// (data-action, an api.Bulk* action), bulk-selection-result (the last
// action's outcome; data-done, data-skipped, data-failed), bulk-error (a
// refusal), bulk-all-action and bulk-all ("Act on all N matching"),
// bulk-all-unavailable (why the filters allow no job); a job's card
// bulk-job (data-bulk-id, data-status) with bulk-job-title,
// bulk-job-status, bulk-job-matched, -done, -skipped, -failed,
// bulk-job-reason (data-reason), bulk-job-error, bulk-job-cancel and
// bulk-job-close.

import { get, newSignalId, request, rerunRun, runPath, whoami } from './api.js';
import { describe, describeFilter, bulkFilter, jobCard } from './bulkjob.js';
import { h } from './dom.js';
import { runSignal } from './signals.js';

// ACTIONS are the bulk actions, as api.Bulk* names them, with their
// buttons' labels and the key's action each needs.
const ACTIONS = [
  { action: 'CANCEL', label: 'Cancel', needs: 'signal.send' },
  { action: 'PAUSE', label: 'Pause', needs: 'signal.send' },
  { action: 'RESUME', label: 'Resume', needs: 'signal.send' },
  { action: 'RETRY_FAILED_STEPS', label: 'Retry failed steps', needs: 'signal.send' },
  { action: 'RERUN', label: 'Rerun failed', needs: 'run.start' },
];

// skipReason says why action is pointless on a run in status with
// failedSteps failed steps, as the gateway's bulk jobs skip it, or ''.
function skipReason(action, status, failedSteps) {
  if (action === 'RETRY_FAILED_STEPS' || action === 'RERUN') {
    return status === 'FAILED' && failedSteps > 0 ? '' : 'run is not FAILED';
  }
  const s = runSignal(action, status);
  return s.ok ? '' : s.why;
}

// bulkControls returns the bulk parts of the runs list: {bar, headCell,
// cell(run), drawn({items, nextCursor, loaded}), unmount()}. filters()
// is runs.js's filter state now (bulkFilter reads it); refresh reloads
// the list.
// cell(run) is a [sig, build] pair for fillCells, the row's first cell.
export function bulkControls(view, { filters, refresh }) {
  let allowed = null; // the key's actions, once GET /v1/whoami answered
  const selected = new Map(); // runId → its list row, as last drawn
  const boxes = new Map(); // runId → its checkbox
  let shown = [];
  let complete = false; // every matching run is shown
  let busy = false;
  let pending = null; // {key, base} of a selection action that did not fully succeed

  const selectAll = h('input', { type: 'checkbox', testid: 'bulk-select-all', 'aria-label': 'Select every run shown' });
  const headCell = h('th', { class: 'cell-select', hidden: true }, selectAll);
  const count = h('span', { class: 'muted small', testid: 'bulk-selection-count' });
  const buttons = ACTIONS.map((a) => {
    const b = h('button', { type: 'button', class: `btn btn-sm${a.action === 'CANCEL' ? ' btn-danger' : ''}`, testid: 'bulk-action',
      'data-action': a.action, text: a.label, disabled: true });
    b.addEventListener('click', () => actOnSelection(a));
    return b;
  });
  const result = h('span', { class: 'small', role: 'status', testid: 'bulk-selection-result' });
  const allAction = h('select', { class: 'select', testid: 'bulk-all-action', 'aria-label': 'Action on every matching run' });
  const allButton = h('button', { type: 'button', class: 'btn btn-sm', testid: 'bulk-all' });
  const allGroup = h('span', { class: 'bulk-all', hidden: true }, allAction, allButton);
  const allNote = h('span', { class: 'muted small', testid: 'bulk-all-unavailable', hidden: true });
  const error = h('div', { class: 'inline-error', role: 'alert', hidden: true, testid: 'bulk-error' });
  const job = jobCard({ view, onEnd: () => refresh() });
  const bar = h('div', { class: 'bulk', testid: 'bulk-bar', hidden: true, 'data-allowed': 'unknown' },
    h('div', { class: 'bulk-bar', role: 'group', 'aria-label': 'Act on runs' },
      h('span', { class: 'bulk-selected' }, count, buttons, result),
      h('span', { class: 'bulk-matching' }, allGroup, allNote)),
    error, job.el);

  // may reports whether the key may take action a.
  const may = (a) => Boolean(allowed?.includes(a.needs));

  whoami().then((me) => {
    allowed = Array.isArray(me.actions) ? me.actions : [];
    const on = may(ACTIONS[0]);
    bar.dataset.allowed = String(on);
    if (!on) return;
    bar.hidden = false;
    headCell.hidden = false;
    for (const b of buttons) b.hidden = !may(ACTIONS.find((a) => a.action === b.dataset.action));
    for (const a of ACTIONS.filter(may)) allAction.append(h('option', { value: a.action, text: a.label }));
    refresh();
  }, () => { bar.dataset.allowed = 'false'; }); // Without the answer the list offers no action.

  selectAll.addEventListener('change', () => {
    for (const run of shown) {
      if (selectAll.checked) selected.set(run.runId, run);
      else selected.delete(run.runId);
    }
    for (const [id, box] of boxes) box.checked = selected.has(id);
    drawSelection();
  });

  function cell(run) {
    const on = may(ACTIONS[0]);
    return [`select|${on}`, () => {
      const td = h('td', { class: 'cell-select', hidden: !on });
      // A click here selects; it does not open the run.
      td.addEventListener('click', (ev) => ev.stopPropagation());
      if (!on) return td;
      const box = h('input', { type: 'checkbox', testid: 'bulk-select', 'data-run-id': run.runId, 'aria-label': `Select run ${run.runId}` });
      box.checked = selected.has(run.runId);
      box.addEventListener('change', () => {
        const row = shown.find((r) => r.runId === run.runId) || run;
        if (box.checked) selected.set(run.runId, row);
        else selected.delete(run.runId);
        drawSelection();
      });
      boxes.set(run.runId, box);
      td.append(box);
      return td;
    }];
  }

  // drawn follows a draw of the list: the selection keeps only the runs
  // shown, with their latest rows.
  function drawn({ items, nextCursor, loaded }) {
    shown = items;
    complete = loaded && !nextCursor;
    const ids = new Set(items.map((r) => r.runId));
    for (const id of [...selected.keys()]) if (!ids.has(id)) selected.delete(id);
    for (const id of [...boxes.keys()]) if (!ids.has(id)) boxes.delete(id);
    for (const r of items) if (selected.has(r.runId)) selected.set(r.runId, r);
    drawSelection();
    drawMatching();
  }

  function drawSelection() {
    const n = selected.size;
    count.textContent = `${n} selected`;
    for (const b of buttons) b.disabled = busy || n === 0;
    selectAll.checked = n > 0 && n === shown.length;
    selectAll.indeterminate = n > 0 && n < shown.length;
    selectAll.disabled = shown.length === 0;
  }

  // drawMatching offers "Act on all matching" while the list has a
  // filter a bulk job can express.
  function drawMatching() {
    const { empty, unsupported } = bulkFilter(filters());
    allGroup.hidden = empty || unsupported.length > 0;
    allNote.hidden = !unsupported.length;
    allNote.textContent = unsupported.length ? `A bulk job cannot filter by ${unsupported.join(', ')}: select the runs instead.` : '';
    allButton.textContent = `Act on all ${complete ? `${shown.length} ` : ''}matching`;
    allButton.disabled = busy;
  }

  allButton.addEventListener('click', async () => {
    const a = ACTIONS.find((x) => x.action === allAction.value);
    const { filter, empty, unsupported } = bulkFilter(filters());
    if (!a || empty || unsupported.length) return;
    const n = complete ? `${shown.length} ` : '';
    const ok = await view.confirm({
      title: `${a.label}: all ${n}matching runs?`,
      text: `A bulk job takes ${a.action} on every run matching ${describeFilter(filter)} when it starts. Runs it cannot act on are skipped.`,
      ok: `${a.label} all ${n}matching`,
      dismiss: 'Back',
    });
    if (!ok) return;
    allButton.disabled = true;
    try {
      await job.start(a.action, filter);
      showError(null);
    } catch (err) {
      showError(err);
    } finally {
      allButton.disabled = busy;
    }
  });

  async function actOnSelection(a) {
    const runs = [...selected.values()];
    if (!runs.length || busy) return;
    if (a.action === 'CANCEL' && !await view.confirm({
      title: `Cancel ${runs.length} ${runs.length === 1 ? 'run' : 'runs'}?`,
      text: 'Running steps are asked to stop and no further step starts. A cancelled run cannot be resumed.',
      ok: 'Cancel runs', dismiss: 'Keep running',
    })) return;
    const key = `${a.action}|${runs.map((r) => r.runId).sort().join(',')}`;
    if (pending?.key !== key) pending = { key, base: newSignalId() };
    busy = true;
    drawSelection();
    const tally = { done: 0, skipped: 0, failed: 0, reasons: {}, first: null };
    for (const [i, run] of runs.entries()) {
      result.textContent = `${a.label}: ${i + 1} of ${runs.length}…`;
      await actOn(a.action, run, pending.base, tally);
    }
    busy = false;
    if (!tally.failed) {
      pending = null;
      selected.clear();
      for (const box of boxes.values()) box.checked = false;
    }
    report(a, tally);
    drawSelection();
    refresh();
  }

  function report(a, t) {
    const why = Object.entries(t.reasons).map(([r, n]) => `${n} ${r}`).join(', ');
    result.textContent = `${a.label}: ${t.done} done, ${t.skipped} skipped${why ? ` (${why})` : ''}, ${t.failed} failed`;
    result.dataset.done = String(t.done);
    result.dataset.skipped = String(t.skipped);
    result.dataset.failed = String(t.failed);
    showError(t.first);
    view.toast({ kind: t.failed ? 'error' : 'success', text: t.first ? `${result.textContent}: ${describe(t.first)}` : result.textContent });
  }

  function showError(err) {
    error.hidden = !err;
    error.textContent = err ? describe(err) : '';
  }

  return {
    bar, headCell, cell, drawn,
    unmount() { job.unmount(); },
  };
}

// actOn takes action on run with ids derived from base, and counts what
// came of it in tally: done, skipped (with why) or failed (the first
// refusal kept). A run that has ended meanwhile is skipped, as the
// gateway's bulk jobs count it.
async function actOn(action, run, base, tally) {
  const why = skipReason(action, run.status, Number(run.failedSteps) || 0);
  try {
    if (why) throw new Skip(why);
    if (action === 'RETRY_FAILED_STEPS' || action === 'RERUN') {
      const failed = await failedSteps(run.runId);
      if (!failed.length) throw new Skip('run is not FAILED');
      if (action === 'RERUN') await rerunRun(run.runId, { fromStepId: failed[0], runRequestId: `${base}-${run.runId}` });
      else for (const stepId of failed) await signal(run.runId, 'RETRY_STEP', stepSignalId(base, stepId), { stepId });
    } else {
      await signal(run.runId, action, base);
    }
    tally.done++;
  } catch (err) {
    const reason = err instanceof Skip ? err.message : err?.code === 'RunTerminal' ? 'run has ended' : '';
    if (reason) {
      tally.skipped++;
      tally.reasons[reason] = (tally.reasons[reason] || 0) + 1;
      return;
    }
    tally.failed++;
    tally.first ??= err;
  }
}

// Skip is a run the action is pointless on; its message says why.
class Skip extends Error {}

// failedSteps returns the ids of run runId's FAILED top-level steps, in
// the snapshot's order, as the gateway's bulk jobs retry them.
async function failedSteps(runId) {
  const res = await get(runPath(runId));
  return (res.data?.steps || []).filter((s) => s.status === 'FAILED').map((s) => s.stepId);
}

// signal posts signal name with signalId to run runId, through the path
// the run page's signals take.
function signal(runId, signalName, signalId, payload) {
  const body = { signalName, signalId };
  if (payload !== undefined) body.payload = payload;
  return request('POST', `/gateway/v1/runs/${encodeURIComponent(runId)}/signals`, { body });
}

// MAX_SIGNAL_ID is the gateway's limit on a signalId, in UTF-8 bytes
// (api.MaxSignalIDBytes).
const MAX_SIGNAL_ID = 128;

// stepSignalId is the signalId of the RETRY_STEP of step stepId derived
// from base: base-stepId, or, when that is too long, base-h and two
// 32-bit FNV-1a hashes of stepId (two offset bases).
function stepSignalId(base, stepId) {
  const id = `${base}-${stepId}`;
  const bytes = new TextEncoder().encode(stepId);
  if (bytes.length + base.length + 1 <= MAX_SIGNAL_ID) return id;
  const fnv = (seed) => bytes.reduce((x, byte) => Math.imul(x ^ byte, 0x01000193) >>> 0, seed).toString(16).padStart(8, '0');
  return `${base}-h${fnv(0x811c9dc5)}${fnv(0x050c5d1f)}`;
}
