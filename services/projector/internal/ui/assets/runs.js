// The runs list: GET /v1/runs with filters in the address, cursor
// pagination and a refresh every 2 s while the tab is visible (the list
// machinery is pagedlist.js), and the open alerts above it. The toolbar
// sets the status, plan id and version, labels (label=KEY=VALUE, each a
// chip, ANDed) and the created range; the address may hold several
// statuses (status=A,B), shown as one choice of the status select. The
// filters set only from the address (trigger=, from the Triggers page;
// parent=, from a run's "Child runs"; schedule=, rerunOf= and the ended
// range) show as chips, each with its own remove. Each row shows the
// run's labels; a click on one filters by it. A key that may send
// signals also gets a checkbox per row and the bulk action bar (bulk.js).

import { get } from './api.js';
import { bulkControls } from './bulk.js';
import { RUN_STATUSES, fillCells, h, icon, isTerminal, pill, pollMs, replace, runHref, stalePill } from './dom.js';
import { between, dateTime, duration, parseTime, relativeTime, shortId } from './format.js';
import { pagedList } from './pagedlist.js';

const POLL_MS = pollMs(2000);
const COLUMNS = 7;

// ADDRESS_ONLY are the filters set only from the address, each shown as a
// chip: its query parameter, test id and label.
const ADDRESS_ONLY = [
  { name: 'trigger', testid: 'filter-trigger', label: (v) => `trigger ${v}`, remove: 'Remove the trigger filter' },
  { name: 'schedule', testid: 'filter-schedule', label: (v) => `schedule ${v}`, remove: 'Remove the schedule filter' },
  { name: 'parent', testid: 'filter-parent', label: (v) => `child runs of ${shortId(v)}`, remove: 'Remove the parent run filter',
    title: (v) => `the child runs of run ${v}` },
  { name: 'rerunOf', testid: 'filter-rerun-of', label: (v) => `reruns of ${shortId(v)}`, remove: 'Remove the rerun filter',
    title: (v) => `the reruns of run ${v}` },
  { name: 'endedAfter', testid: 'filter-ended-after', label: (v) => `ended after ${dateTime(parseTime(v))}`, remove: 'Remove the ended-after filter' },
  { name: 'endedBefore', testid: 'filter-ended-before', label: (v) => `ended before ${dateTime(parseTime(v))}`, remove: 'Remove the ended-before filter' },
];

let cssLoaded = false;

// loadCSS links runs.css and bulk.css, next to this module, once.
function loadCSS() {
  if (cssLoaded) return;
  cssLoaded = true;
  for (const file of ['./runs.css', './bulk.css']) {
    document.head.append(h('link', { rel: 'stylesheet', href: new URL(file, import.meta.url).href }));
  }
}

// mountRuns draws the runs list into root and returns {unmount}.
export function mountRuns(root, view) {
  loadCSS();
  const params = new URLSearchParams(location.search);
  const state = {
    // status is the comma-separated statuses: status=A,B and status=A&status=B read alike.
    status: params.getAll('status').flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean).join(','),
    plan: params.get('plan') || '',
    planVersion: params.get('planVersion') || '',
    labels: params.getAll('label').filter(Boolean), // each KEY=VALUE
    createdAfter: params.get('createdAfter') || '',
    createdBefore: params.get('createdBefore') || '',
  };
  for (const f of ADDRESS_ONLY) state[f.name] = params.get(f.name) || '';
  const filtered = () => Boolean(state.status || state.plan || state.labels.length || state.createdAfter || state.createdBefore ||
    ADDRESS_ONLY.some((f) => state[f.name]));
  const bulk = bulkControls(view, { filters: () => state, refresh: () => list.refresh() });

  // Toolbar.
  const statusSelect = h('select', { id: 'filter-status', class: 'select', testid: 'filter-status', 'aria-label': 'Status' },
    h('option', { value: '', text: 'All statuses' }),
    RUN_STATUSES.map((s) => h('option', { value: s, text: titleCase(s) })),
    h('option', { value: 'STALE', text: 'Stale (gap open)' }));
  if (state.status.includes(',')) { // several, from the address
    statusSelect.append(h('option', { value: state.status, testid: 'filter-status-several',
      text: state.status.split(',').map(titleCase).join(' or ') }));
  }
  statusSelect.value = state.status;
  const planInput = h('input', {
    id: 'filter-plan', class: 'input', type: 'search', testid: 'filter-plan',
    placeholder: 'Plan id', 'aria-label': 'Plan id', spellcheck: 'false', autocomplete: 'off',
  });
  planInput.value = state.plan;
  const versionInput = h('input', {
    id: 'filter-plan-version', class: 'input', type: 'search', testid: 'filter-plan-version',
    placeholder: 'Version', 'aria-label': 'Plan version (with a plan id)', spellcheck: 'false', autocomplete: 'off',
  });
  versionInput.value = state.planVersion;
  const labelInput = h('input', {
    id: 'filter-label', class: 'input', type: 'search', testid: 'filter-label',
    placeholder: 'Label key=value', 'aria-label': 'Add a label filter, key=value', spellcheck: 'false', autocomplete: 'off',
  });
  const labelChips = h('span', { class: 'label-filters', testid: 'label-filters' });
  const createdAfter = h('input', { class: 'input input-time', type: 'datetime-local', step: '1', testid: 'filter-created-after',
    'aria-label': 'Created at or after', title: 'Created at or after' });
  const createdBefore = h('input', { class: 'input input-time', type: 'datetime-local', step: '1', testid: 'filter-created-before',
    'aria-label': 'Created before', title: 'Created before' });
  createdAfter.value = localInput(state.createdAfter);
  createdBefore.value = localInput(state.createdBefore);
  const chips = ADDRESS_ONLY.map((f) => {
    const chip = filterChip(f.testid, f.label(state[f.name]), f.remove, () => dropFilter(f.name));
    if (f.title) chip.title = f.title(state[f.name]);
    if (f.name === 'parent') chip.dataset.runId = state.parent;
    chip.hidden = !state[f.name];
    return chip;
  });
  const clearFilters = h('button', { type: 'button', class: 'linklike', text: 'Clear filters', testid: 'filter-clear' });
  const summary = h('span', { class: 'muted small', testid: 'runs-summary' });

  // Table.
  const tbody = h('tbody');
  const table = h('table', { class: 'table runs-table', testid: 'runs-table' },
    h('thead', {}, h('tr', {}, bulk.headCell,
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
      h('div', { class: 'toolbar-filters' }, statusSelect, planInput, versionInput, labelInput, labelChips,
        h('span', { class: 'created-range muted small' }, 'created', createdAfter, '–', createdBefore), chips, clearFilters),
      summary),
    bulk.bar,
    errorBox,
    h('div', { class: 'card table-card' }, h('div', { class: 'table-scroll' }, table)),
    h('div', { class: 'list-foot' }, loadMore));

  // query returns the API query of the current filters.
  function query(extra) {
    const q = new URLSearchParams();
    if (state.status) q.set('status', state.status);
    if (state.plan) q.set('plan', state.plan);
    if (state.plan && state.planVersion) q.set('planVersion', state.planVersion);
    for (const l of state.labels) q.append('label', l);
    if (state.createdAfter) q.set('createdAfter', state.createdAfter);
    if (state.createdBefore) q.set('createdBefore', state.createdBefore);
    for (const f of ADDRESS_ONLY) if (state[f.name]) q.set(f.name, state[f.name]);
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
    fillRow: (row, run, now) => fillRow(row.nodes[0], run, now, addLabel, bulk.cell(run)),
    emptyRow,
    onDraw({ items, nextCursor, loaded }) {
      summary.textContent = loaded
        ? `${items.length}${nextCursor ? '+' : ''} ${items.length === 1 ? 'run' : 'runs'}${filtered() ? ' matching' : ''}`
        : '';
      clearFilters.hidden = !filtered();
      bulk.drawn({ items, nextCursor, loaded });
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
  // force reloads even when the inputs did not change: Clear filters, a
  // chip's remove and a label change the filters the inputs do not hold.
  function applyFilters(force = false) {
    const next = {
      status: statusSelect.value, plan: planInput.value.trim(), planVersion: versionInput.value.trim(),
      createdAfter: isoOf(createdAfter.value, state.createdAfter), createdBefore: isoOf(createdBefore.value, state.createdBefore),
    };
    if (!force && Object.entries(next).every(([k, v]) => state[k] === v)) return;
    Object.assign(state, next);
    chips.forEach((chip, i) => { chip.hidden = !state[ADDRESS_ONLY[i].name]; });
    drawLabelChips();
    const q = query({});
    history.replaceState(null, '', q ? `/?${q}` : '/');
    list.reset();
  }

  // addLabel adds the label filter text (KEY=VALUE), once.
  function addLabel(text) {
    const l = text.trim();
    if (!l.includes('=') || state.labels.includes(l)) return;
    state.labels.push(l);
    applyFilters(true);
  }

  function drawLabelChips() {
    replace(labelChips, state.labels.map((l, i) => {
      const chip = filterChip('filter-label-chip', `label ${l}`, `Remove the label filter ${l}`, () => {
        state.labels.splice(i, 1);
        applyFilters(true);
      });
      chip.dataset.label = l;
      return chip;
    }));
  }
  drawLabelChips();

  let debounce = null;
  statusSelect.addEventListener('change', () => applyFilters());
  for (const input of [planInput, versionInput]) {
    input.addEventListener('input', () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => applyFilters(), 300);
    });
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        clearTimeout(debounce);
        applyFilters();
      }
    });
  }
  for (const input of [createdAfter, createdBefore]) input.addEventListener('change', () => applyFilters());
  labelInput.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter') return;
    addLabel(labelInput.value);
    labelInput.value = '';
  });
  clearFilters.addEventListener('click', () => {
    statusSelect.value = '';
    planInput.value = '';
    versionInput.value = '';
    createdAfter.value = '';
    createdBefore.value = '';
    state.labels = [];
    for (const f of ADDRESS_ONLY) state[f.name] = '';
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
      bulk.unmount();
      clearTimeout(debounce);
    },
  };
}

// fillRow renders run into tr, cell by cell: a cell whose content did not
// change is left alone, so a focused link keeps its focus across refreshes.
// A click on one of the run's labels calls onLabel with it (KEY=VALUE).
// first is the row's first cell, a [sig, build] pair (bulk.js's).
function fillRow(tr, run, now, onLabel, first) {
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
    first,
    [`${run.runId}|${run.projectId}|${run.environmentId}|${run.parentRunId}`, () => h('td', { class: 'cell-run' },
      h('a', { href: runHref(run.runId), 'data-nav': true, class: 'mono run-link', title: run.runId, text: shortId(run.runId) }),
      h('div', { class: 'sub', text: [run.projectId, run.environmentId].filter(Boolean).join(' · ') }),
      run.parentRunId ? h('div', { class: 'sub' }, 'child of ',
        h('a', { href: runHref(run.parentRunId), 'data-nav': true, class: 'mono', testid: 'run-row-parent', title: run.parentRunId, text: shortId(run.parentRunId) })) : null)],
    [`${run.planId}@${run.planVersion}|${labelList(run.labels).join('\n')}`, () => h('td', { class: 'cell-plan' },
      h('span', { class: 'plan-id', text: run.planId || '—' }),
      run.planVersion ? h('span', { class: 'plan-version', text: `@${run.planVersion}` }) : null,
      labelRow(run.labels, onLabel))],
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

// labelList is labels as KEY=VALUE texts, sorted by key.
function labelList(labels) {
  return Object.keys(labels || {}).sort().map((k) => `${k}=${labels[k]}`);
}

// labelRow is a run's labels, each a button that filters by it; null
// when it has none.
function labelRow(labels, onLabel) {
  const list = labelList(labels);
  if (!list.length) return null;
  return h('div', { class: 'run-labels' }, list.map((l) => {
    const b = h('button', { type: 'button', class: 'chip run-label mono small', testid: 'run-label', title: `Show the runs labelled ${l}`, text: l });
    b.addEventListener('click', () => onLabel(l));
    return b;
  }));
}

// localInput is the RFC 3339 time iso as a datetime-local input's value,
// in local time; '' for none.
function localInput(iso) {
  const t = iso ? new Date(iso) : null;
  if (!t || Number.isNaN(t.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())}T${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}`;
}

// isoOf is a datetime-local input's value as an RFC 3339 time: current,
// the time the address gave, when the input still shows it (the input
// holds whole seconds); '' for none.
function isoOf(value, current) {
  if (!value) return '';
  if (current && localInput(current) === value) return current;
  const t = new Date(value);
  return Number.isNaN(t.getTime()) ? '' : t.toISOString();
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
