// The runs list: GET /v1/runs with filters in the address, cursor
// pagination and a refresh every 2 s while the tab is visible.

import { get } from './api.js';
import { RUN_STATUSES, h, icon, isTerminal, pill, replace, stalePill } from './dom.js';
import { between, dateTime, duration, parseTime, relativeTime, shortId } from './format.js';

const POLL_MS = 2000;
const PAGE = 50;
const MAX_PAGE = 200;
const COLUMNS = 6;

// mountRuns draws the runs list into root and returns {unmount}.
export function mountRuns(root, view) {
  const params = new URLSearchParams(location.search);
  const state = {
    status: params.get('status') || '',
    plan: params.get('plan') || '',
    runs: [],
    nextCursor: null,
    loaded: false,
    generation: 0,
  };
  const rows = new Map(); // runId → <tr>
  const ac = new AbortController();
  let timer = null;

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
      h('div', { class: 'toolbar-filters' }, statusSelect, planInput, clearFilters),
      summary),
    errorBox,
    h('div', { class: 'card table-card' }, h('div', { class: 'table-scroll' }, table)),
    h('div', { class: 'list-foot' }, loadMore));

  // query returns the API query of the current filters.
  function query(extra) {
    const q = new URLSearchParams();
    if (state.status) q.set('status', state.status);
    if (state.plan) q.set('plan', state.plan);
    for (const [k, v] of Object.entries(extra)) q.set(k, String(v));
    return q.toString();
  }

  // refresh fetches the first page again, as many rows as are shown (up to
  // 200). A complete answer (no nextCursor) replaces the list; otherwise the
  // rows loaded beyond it with "Load more" stay behind it.
  async function refresh() {
    const generation = state.generation;
    const limit = Math.min(Math.max(state.runs.length, PAGE), MAX_PAGE);
    try {
      const [res] = await Promise.all([
        get(`/v1/runs?${query({ limit })}`, { signal: ac.signal }),
        refreshAlerts(),
      ]);
      if (generation !== state.generation) return;
      const fresh = res.data?.runs || [];
      const cursor = res.data?.nextCursor || null;
      const merged = cursor ? mergeHead(state.runs, fresh) : fresh;
      if (merged.length > fresh.length) {
        state.runs = merged; // Rows loaded beyond the first page stay, with their cursor.
      } else {
        state.runs = fresh;
        state.nextCursor = cursor;
      }
      state.loaded = true;
      showError(null);
      view.setLive('live');
      draw();
    } catch (err) {
      if (ac.signal.aborted || generation !== state.generation) return;
      view.setLive('error');
      showError(err);
    }
  }

  async function refreshAlerts() {
    try {
      const res = await get('/v1/alerts', { signal: ac.signal });
      drawAlerts(res.data?.alerts || []);
    } catch {
      // Alerts are a hint; the runs request reports errors.
    }
  }

  async function more() {
    if (!state.nextCursor) return;
    const generation = state.generation;
    loadMore.disabled = true;
    try {
      const res = await get(`/v1/runs?${query({ limit: PAGE, cursor: state.nextCursor })}`, { signal: ac.signal });
      if (generation !== state.generation) return;
      const known = new Set(state.runs.map((r) => r.runId));
      state.runs = state.runs.concat((res.data?.runs || []).filter((r) => !known.has(r.runId)));
      state.nextCursor = res.data?.nextCursor || null;
      showError(null);
      draw();
    } catch (err) {
      if (!ac.signal.aborted) showError(err);
    } finally {
      loadMore.disabled = false;
    }
  }

  function showError(err) {
    errorBox.hidden = !err;
    if (err) replace(errorBox, icon('alert'), `Could not load runs — ${err.describe ? err.describe() : err.message}. Retrying…`);
  }

  function draw() {
    const now = Date.now();
    const wanted = [];
    for (const run of state.runs) {
      let tr = rows.get(run.runId);
      if (!tr) {
        tr = h('tr', { class: 'run-row', testid: 'run-row', 'data-run-id': run.runId });
        tr.addEventListener('click', (ev) => {
          if (ev.target.closest('a, button') || String(window.getSelection())) return;
          view.navigate(runHref(run.runId));
        });
        rows.set(run.runId, tr);
      }
      fillRow(tr, run, now);
      wanted.push(tr);
    }
    const keep = new Set(wanted);
    for (const [id, tr] of rows) {
      if (!keep.has(tr)) {
        tr.remove();
        rows.delete(id);
      }
    }
    tbody.querySelector('.empty-row')?.remove();
    wanted.forEach((tr, i) => {
      if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
    });
    if (wanted.length === 0 && state.loaded) tbody.append(emptyRow());
    loadMore.hidden = !state.nextCursor;
    const filtered = state.status || state.plan;
    summary.textContent = state.loaded
      ? `${state.runs.length}${state.nextCursor ? '+' : ''} ${state.runs.length === 1 ? 'run' : 'runs'}${filtered ? ' matching' : ''}`
      : '';
    clearFilters.hidden = !filtered;
  }

  function emptyRow() {
    const filtered = state.status || state.plan;
    return h('tr', { class: 'empty-row' }, h('td', { colspan: COLUMNS },
      h('div', { class: 'empty' },
        h('strong', { text: filtered ? 'No runs match these filters' : 'No runs yet' }),
        h('span', { class: 'muted', text: filtered ? 'Try another status or plan id.' : 'Runs appear here as soon as the gateway approves them.' }))));
  }

  function drawAlerts(list) {
    alerts.hidden = list.length === 0;
    replace(alerts, list.map((a) => h('div', { class: `alert alert-${/^P[1-4]$/.test(a.severity) ? a.severity.toLowerCase() : 'other'}`, testid: 'alert' },
      h('span', { class: 'alert-sev', text: a.severity || '' }),
      h('span', { class: 'mono small', text: a.code || '' }),
      h('span', { class: 'alert-msg', text: a.message || '' }),
      a.runId ? h('a', { href: runHref(a.runId), 'data-nav': true, class: 'mono small', text: shortId(a.runId) }) : null)));
  }

  // applyFilters reads the inputs, mirrors them in the address and reloads.
  function applyFilters() {
    const status = statusSelect.value;
    const plan = planInput.value.trim();
    if (status === state.status && plan === state.plan) return;
    state.status = status;
    state.plan = plan;
    state.generation++;
    state.runs = [];
    state.nextCursor = null;
    state.loaded = false;
    const q = query({});
    history.replaceState(null, '', q ? `/?${q}` : '/');
    draw();
    restart();
  }

  let debounce = null;
  statusSelect.addEventListener('change', applyFilters);
  planInput.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(applyFilters, 300);
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
    applyFilters();
  });
  loadMore.addEventListener('click', more);

  // The poll loop: refresh, wait 2 s, again; paused while the tab is hidden.
  async function tick() {
    timer = null;
    if (document.hidden) {
      view.setLive('paused');
      return; // onVisibility restarts it.
    }
    await refresh();
    if (!ac.signal.aborted && !timer && !document.hidden) timer = setTimeout(tick, POLL_MS);
  }
  function restart() {
    clearTimeout(timer);
    timer = null;
    tick();
  }
  function onVisibility() {
    if (!document.hidden) restart();
    else view.setLive('paused');
  }
  document.addEventListener('visibilitychange', onVisibility);
  draw();
  tick();

  return {
    unmount() {
      ac.abort();
      clearTimeout(timer);
      clearTimeout(debounce);
      document.removeEventListener('visibilitychange', onVisibility);
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
  const cells = [
    [`${run.runId}|${run.projectId}|${run.environmentId}`, () => h('td', { class: 'cell-run' },
      h('a', { href: runHref(run.runId), 'data-nav': true, class: 'mono run-link', title: run.runId, text: shortId(run.runId) }),
      h('div', { class: 'sub', text: [run.projectId, run.environmentId].filter(Boolean).join(' · ') }))],
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
  ];
  cells.forEach(([sig, build], i) => {
    const old = tr.children[i];
    if (old && old.dataset.sig === sig) return;
    const td = build();
    td.dataset.sig = sig;
    if (old) old.replaceWith(td);
    else tr.append(td);
  });
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

// mergeHead puts fresh, a new first page, in front of the rows of old that
// come after it.
function mergeHead(old, fresh) {
  if (fresh.length === 0) return old;
  const ids = new Set(fresh.map((r) => r.runId));
  const last = old.findIndex((r) => r.runId === fresh[fresh.length - 1].runId);
  const tail = (last >= 0 ? old.slice(last + 1) : old.slice(fresh.length)).filter((r) => !ids.has(r.runId));
  return fresh.concat(tail);
}

function runHref(runId) {
  return `/runs/${encodeURIComponent(runId)}`;
}

function titleCase(s) {
  return s.charAt(0) + s.slice(1).toLowerCase();
}
