// The runs list: GET /v1/runs with filters in the address, cursor
// pagination and a refresh every 2 s while the tab is visible (the list
// machinery is pagedlist.js), and the open alerts above it. The filters
// set only from the address (trigger=, from the Triggers page; parent=,
// from a run's "Child runs") show as chips, each with its own remove.

import { get } from './api.js';
import { RUN_STATUSES, fillCells, h, icon, isTerminal, pill, pollMs, replace, runHref, stalePill } from './dom.js';
import { between, dateTime, duration, parseTime, relativeTime, shortId } from './format.js';
import { pagedList } from './pagedlist.js';

const POLL_MS = pollMs(2000);
const COLUMNS = 6;

// mountRuns draws the runs list into root and returns {unmount}.
export function mountRuns(root, view) {
  const params = new URLSearchParams(location.search);
  const state = {
    status: params.get('status') || '',
    plan: params.get('plan') || '',
    trigger: params.get('trigger') || '', // set only from the address (the Triggers page links here)
    parent: params.get('parent') || '', // set only from the address (a run's "Child runs" links here)
  };
  const filtered = () => state.status || state.plan || state.trigger || state.parent;

  // Toolbar.
  const statusSelect = h('select', { id: 'filter-status', class: 'select', testid: 'filter-status', 'aria-label': 'Status' },
    h('option', { value: '', text: 'All statuses' }),
    RUN_STATUSES.map((s) => h('option', { value: s, text: titleCase(s) })),
    h('option', { value: 'STALE', text: 'Stale (gap open)' }));
  statusSelect.value = state.status;
  const planInput = h('input', {
    id: 'filter-plan', class: 'input', type: 'search', testid: 'filter-plan',
    placeholder: 'Plan id', 'aria-label': 'Plan id', spellcheck: 'false', autocomplete: 'off',
  });
  planInput.value = state.plan;
  const triggerChip = filterChip('filter-trigger', `trigger ${state.trigger}`, 'Remove the trigger filter', () => dropFilter('trigger'));
  const parentChip = filterChip('filter-parent', `child runs of ${shortId(state.parent)}`, 'Remove the parent run filter', () => dropFilter('parent'));
  parentChip.title = `the child runs of run ${state.parent}`;
  parentChip.dataset.runId = state.parent;
  triggerChip.hidden = !state.trigger;
  parentChip.hidden = !state.parent;
  const clearFilters = h('button', { type: 'button', class: 'linklike', text: 'Clear filters', testid: 'filter-clear' });
  const summary = h('span', { class: 'muted small', testid: 'runs-summary' });

  // Table.
  const tbody = h('tbody');
  const table = h('table', { class: 'table runs-table', testid: 'runs-table' },
    h('thead', {}, h('tr', {},
      h('th', { text: 'Run' }), h('th', { text: 'Plan' }), h('th', { text: 'Status' }),
      h('th', { text: 'Steps' }), h('th', { text: 'Created' }), h('th', { class: 'num', text: 'Duration' }))),
    tbody);
  const errorBox = h('div', { class: 'inline-error', role: 'alert', hidden: true, testid: 'runs-error' });
  const loadMore = h('button', { type: 'button', class: 'btn', testid: 'load-more', text: 'Load more', hidden: true });
  const alerts = h('div', { class: 'alerts', hidden: true, testid: 'alerts' });

  replace(root,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'Runs' }), h('p', { class: 'muted', text: 'Every run of your tenant, newest first.' }))),
    alerts,
    h('div', { class: 'toolbar' },
      h('div', { class: 'toolbar-filters' }, statusSelect, planInput, triggerChip, parentChip, clearFilters),
      summary),
    errorBox,
    h('div', { class: 'card table-card' }, h('div', { class: 'table-scroll' }, table)),
    h('div', { class: 'list-foot' }, loadMore));

  // query returns the API query of the current filters.
  function query(extra) {
    const q = new URLSearchParams();
    if (state.status) q.set('status', state.status);
    if (state.plan) q.set('plan', state.plan);
    if (state.trigger) q.set('trigger', state.trigger);
    if (state.parent) q.set('parent', state.parent);
    for (const [k, v] of Object.entries(extra)) q.set(k, String(v));
    return q.toString();
  }

  const list = pagedList({
    view, tbody, errorBox, loadMore,
    path: (page) => `/v1/runs?${query(page)}`,
    field: 'runs',
    key: (run) => run.runId,
    noun: 'runs',
    pollMs: POLL_MS,
    alongside: refreshAlerts,
    createRow(run) {
      const tr = h('tr', { class: 'run-row', testid: 'run-row', 'data-run-id': run.runId });
      tr.addEventListener('click', (ev) => {
        if (ev.target.closest('a, button') || String(window.getSelection())) return;
        view.navigate(runHref(run.runId));
      });
      return { nodes: [tr] };
    },
    fillRow: (row, run, now) => fillRow(row.nodes[0], run, now),
    emptyRow,
    onDraw({ items, nextCursor, loaded }) {
      summary.textContent = loaded
        ? `${items.length}${nextCursor ? '+' : ''} ${items.length === 1 ? 'run' : 'runs'}${filtered() ? ' matching' : ''}`
        : '';
      clearFilters.hidden = !filtered();
    },
  });

  async function refreshAlerts(signal) {
    try {
      const res = await get('/v1/alerts', { signal });
      drawAlerts(res.data?.alerts || []);
    } catch {
      // Alerts are a hint; the runs request reports errors.
    }
  }

  function emptyRow() {
    const any = filtered();
    return h('tr', { class: 'empty-row' }, h('td', { colspan: COLUMNS },
      h('div', { class: 'empty' },
        h('strong', { text: any ? 'No runs match these filters' : 'No runs yet' }),
        h('span', { class: 'muted', text: any ? 'Try another status or plan id.' : 'Runs appear here as soon as the gateway approves them.' }))));
  }

  function drawAlerts(raised) {
    alerts.hidden = raised.length === 0;
    replace(alerts, raised.map((a) => h('div', { class: `alert alert-${/^P[1-4]$/.test(a.severity) ? a.severity.toLowerCase() : 'other'}`, testid: 'alert' },
      h('span', { class: 'alert-sev', text: a.severity || '' }),
      h('span', { class: 'mono small', text: a.code || '' }),
      h('span', { class: 'alert-msg', text: a.message || '' }),
      a.runId ? h('a', { href: runHref(a.runId), 'data-nav': true, class: 'mono small', text: shortId(a.runId) }) : null)));
  }

  // applyFilters reads the inputs, mirrors them in the address and reloads.
  // clearing reloads even when the inputs did not change: Clear filters
  // and a chip's remove change the address-only filters (trigger, parent).
  function applyFilters(clearing = false) {
    const status = statusSelect.value;
    const plan = planInput.value.trim();
    if (status === state.status && plan === state.plan && !clearing) return;
    state.status = status;
    state.plan = plan;
    triggerChip.hidden = !state.trigger;
    parentChip.hidden = !state.parent;
    const q = query({});
    history.replaceState(null, '', q ? `/?${q}` : '/');
    list.reset();
  }

  let debounce = null;
  statusSelect.addEventListener('change', () => applyFilters());
  planInput.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => applyFilters(), 300);
  });
  planInput.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      clearTimeout(debounce);
      applyFilters();
    }
  });
  clearFilters.addEventListener('click', () => {
    statusSelect.value = '';
    planInput.value = '';
    state.trigger = '';
    state.parent = '';
    applyFilters(true);
  });

  // dropFilter removes the address-only filter name (a chip's remove).
  function dropFilter(name) {
    state[name] = '';
    applyFilters(true);
  }
  list.start();

  return {
    unmount() {
      list.stop();
      clearTimeout(debounce);
    },
  };
}

// fillRow renders run into tr, cell by cell: a cell whose content did not
// change is left alone, so a focused link keeps its focus across refreshes.
function fillRow(tr, run, now) {
  const created = parseTime(run.createdAt);
  const total = Number(run.stepsTotal) || 0;
  const done = Math.min(Number(run.stepsDone) || 0, total);
  const failed = Math.min(Number(run.failedSteps) || 0, total - done);
  let ms = run.totalDurationMs;
  let running = false;
  if ((ms === null || ms === undefined) && run.startedAt && !isTerminal(run.status)) {
    ms = between(run.startedAt, null, now);
    running = true;
  }
  const age = relativeTime(created, now);
  fillCells(tr, [
    [`${run.runId}|${run.projectId}|${run.environmentId}|${run.parentRunId}`, () => h('td', { class: 'cell-run' },
      h('a', { href: runHref(run.runId), 'data-nav': true, class: 'mono run-link', title: run.runId, text: shortId(run.runId) }),
      h('div', { class: 'sub', text: [run.projectId, run.environmentId].filter(Boolean).join(' · ') }),
      run.parentRunId ? h('div', { class: 'sub' }, 'child of ',
        h('a', { href: runHref(run.parentRunId), 'data-nav': true, class: 'mono', testid: 'run-row-parent', title: run.parentRunId, text: shortId(run.parentRunId) })) : null)],
    [`${run.planId}@${run.planVersion}`, () => h('td', { class: 'cell-plan' },
      h('span', { class: 'plan-id', text: run.planId || '—' }),
      run.planVersion ? h('span', { class: 'plan-version', text: `@${run.planVersion}` }) : null)],
    [`${run.status}|${run.stale}`, () => h('td', { class: 'cell-status' },
      pill(run.status, 'run-status'), run.stale ? stalePill() : null)],
    [`${done}/${total}/${failed}`, () => h('td', { class: 'cell-steps' },
      h('span', { class: 'steps-count', text: `${done}/${total}` }),
      progress(done, failed, total),
      failed > 0 ? h('span', { class: 'steps-failed', text: `${failed} failed` }) : null)],
    [`${age}|${run.createdAt}`, () => h('td', { class: 'cell-age', title: dateTime(created), text: age })],
    [`${ms}|${running}`, () => h('td', { class: `num cell-duration${running ? ' is-live' : ''}`, text: duration(ms) })],
  ]);
}

// progress is a small bar of done (green) and failed (red) steps.
function progress(done, failed, total) {
  const ok = h('span', { class: 'progress-done' });
  const bad = h('span', { class: 'progress-failed' });
  // Widths through the CSSOM: the CSP allows no style attributes.
  ok.style.width = total ? `${(100 * done) / total}%` : '0';
  bad.style.width = total ? `${(100 * failed) / total}%` : '0';
  return h('span', { class: 'progress', role: 'img', 'aria-label': `${done} of ${total} steps done` }, ok, bad);
}

// filterChip is the chip of a filter set from the address: its label and
// a button, named by removeLabel, that calls onRemove.
function filterChip(testid, label, removeLabel, onRemove) {
  const remove = h('button', { type: 'button', class: 'chip-remove', testid: `${testid}-remove`, 'aria-label': removeLabel, title: removeLabel },
    icon('x'));
  remove.addEventListener('click', onRemove);
  return h('span', { class: 'chip chip-filter mono small', testid }, h('span', { class: 'chip-filter-label', text: label }), remove);
}

function titleCase(s) {
  return s.charAt(0) + s.slice(1).toLowerCase();
}
