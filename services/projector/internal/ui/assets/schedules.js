// The schedules list: GET /v1/schedules of the gateway, read through the
// projector's gateway route, ordered by schedule id, with cursor
// pagination and a refresh every 5 s while the tab is visible (the list
// machinery is pagedlist.js), and each schedule's recent skipped fires on
// demand.

import { schedulesPath } from './api.js';
import { fillCells, h, icon, pill, replace, runHref } from './dom.js';
import { dateTime, fromNow, parseTime, relativeTime, shortId } from './format.js';
import { pagedList } from './pagedlist.js';

const POLL_MS = 5000;
const COLUMNS = 8;
// The gateway's defaults (api.DefaultMaxCatchup, api.DefaultTimezone, and
// skip for both policies), for a schedule that does not spell them out.
const DEFAULT_MAX_CATCHUP = 10;
const DEFAULT_TIMEZONE = 'UTC';
const DEFAULT_POLICY = 'skip';

// SKIP_REASONS are the reasons a fire time started no run: the field of
// api.SkipCounts, the reason of an api.SkippedFires record, the label and
// the colour of its tag.
const SKIP_REASONS = [
  { field: 'misfire', reason: 'misfire', label: 'misfire', tone: 'warn' },
  { field: 'overlap', reason: 'overlap', label: 'overlap', tone: 'info' },
  { field: 'catchupLimit', reason: 'catchup_limit', label: 'catchup limit', tone: 'quiet' },
  { field: 'refused', reason: 'refused', label: 'refused', tone: 'bad' },
];

// mountSchedules draws the schedules list into root and returns {unmount}.
export function mountSchedules(root, view) {
  const expanded = new Set(); // scheduleIds whose recent skips are shown

  const summary = h('span', { class: 'muted small', testid: 'schedules-summary' });
  const tbody = h('tbody');
  const table = h('table', { class: 'table schedules-table', testid: 'schedules-table' },
    h('thead', {}, h('tr', {},
      ['Schedule', 'Plan', 'Cron', 'Policies', 'State', 'Next fire', 'Last fire', 'Skipped'].map((text) => h('th', { text })))),
    tbody);
  const errorBox = h('div', { class: 'inline-error', role: 'alert', hidden: true, testid: 'schedules-error' });
  const loadMore = h('button', { type: 'button', class: 'btn', testid: 'load-more', text: 'Load more', hidden: true });

  replace(root,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'Schedules' }),
        h('p', { class: 'muted', text: 'The cron schedules of your tenant: when each fires next, what it started last, and the fires it skipped.' })),
      summary),
    errorBox,
    h('div', { class: 'card table-card' }, h('div', { class: 'table-scroll' }, table)),
    h('div', { class: 'list-foot' }, loadMore));

  const list = pagedList({
    view, tbody, errorBox, loadMore,
    path: schedulesPath,
    field: 'schedules',
    key: (sc) => sc.scheduleId,
    noun: 'schedules',
    pollMs: POLL_MS,
    createRow: (sc) => scheduleRows(sc.scheduleId),
    fillRow: (r, sc, now) => {
      fillRow(r, sc, now);
      fillSkips(r.detail, sc, now);
      showSkips(r, sc.scheduleId);
    },
    dropRow: (r, scheduleId) => expanded.delete(scheduleId),
    emptyRow,
    onDraw({ items, nextCursor, loaded }) {
      const n = items.length;
      summary.textContent = loaded ? `${n}${nextCursor ? '+' : ''} ${n === 1 ? 'schedule' : 'schedules'}` : '';
    },
  });

  // scheduleRows makes the rows of scheduleId: the schedule's row, and the
  // hidden row of its recent skips that its toggle shows.
  function scheduleRows(scheduleId) {
    const detail = h('tr', { class: 'schedule-skips', testid: 'schedule-skips', 'data-schedule-id': scheduleId, hidden: true });
    const toggle = h('button', {
      type: 'button', class: 'btn btn-ghost btn-sm skips-toggle', testid: 'schedule-skips-toggle', 'aria-expanded': 'false',
    });
    const tr = h('tr', { class: 'schedule-row', testid: 'schedule-row', 'data-schedule-id': scheduleId });
    const r = { tr, detail, toggle, nodes: [tr, detail] };
    toggle.addEventListener('click', () => {
      if (expanded.has(scheduleId)) expanded.delete(scheduleId);
      else expanded.add(scheduleId);
      showSkips(r, scheduleId);
    });
    return r;
  }

  // showSkips shows or hides the recent skips of a schedule as the toggle says.
  function showSkips(r, scheduleId) {
    const open = expanded.has(scheduleId) && !r.toggle.hidden;
    r.detail.hidden = !open;
    r.toggle.setAttribute('aria-expanded', String(open));
    r.tr.classList.toggle('is-open', open);
  }

  list.start();

  return {
    unmount() {
      list.stop();
    },
  };
}

// fillRow renders sc into its row, cell by cell: a cell whose content did
// not change is left alone, so a focused link or button keeps its focus
// across refreshes. The skips toggle is one button per row, moved into the
// Skipped cell whenever that cell is redrawn.
function fillRow({ tr, toggle }, sc, now) {
  const next = parseTime(sc.nextFireAt);
  const last = parseTime(sc.lastFireAt);
  const nextRel = next ? (next.getTime() <= now ? `due ${relativeTime(next, now)}` : fromNow(next, now)) : '';
  const lastRel = last ? relativeTime(last, now) : '';
  const skips = Array.isArray(sc.recentSkips) ? sc.recentSkips.length : 0;
  toggle.hidden = skips === 0;
  toggle.title = `The ${skips} latest skip records`;
  if (toggle.textContent !== `Recent (${skips})`) replace(toggle, icon('chevron'), `Recent (${skips})`);
  fillCells(tr, [
    [`${sc.scheduleId}|${sc.projectId}|${sc.environmentId}`, () => h('td', { class: 'cell-schedule' },
      h('span', { class: 'mono schedule-id', title: sc.scheduleId, text: sc.scheduleId }),
      h('div', { class: 'sub', text: [sc.projectId, sc.environmentId].filter(Boolean).join(' · ') }))],
    [`${sc.planId}@${sc.planVersion}`, () => h('td', { class: 'cell-plan', testid: 'schedule-plan' },
      h('span', { class: 'plan-id', text: sc.planId || '—' }),
      sc.planVersion ? h('span', { class: 'plan-version', text: `@${sc.planVersion}` }) : null)],
    [`${sc.cron}|${sc.timezone}`, () => h('td', { class: 'cell-cron', testid: 'schedule-cron' },
      h('code', { class: 'cron', text: sc.cron || '—' }),
      h('span', { class: 'cron-zone', text: ` · ${sc.timezone || DEFAULT_TIMEZONE}` }))],
    [`${sc.misfirePolicy}|${sc.maxCatchup}|${sc.overlapPolicy}`, () => h('td', { class: 'cell-policies', testid: 'schedule-policies' },
      policies(sc))],
    [`${sc.paused}`, () => h('td', { class: 'cell-state' }, pill(sc.paused ? 'PAUSED' : 'ACTIVE', 'schedule-state'))],
    [`${sc.nextFireAt}|${nextRel}|${sc.paused}|${sc.bufferedFireAt}|${sc.lastRunId}`, () => h('td', {
      class: `cell-fire${sc.paused ? ' is-paused' : ''}`, testid: 'schedule-next-fire',
    },
    next
      ? [fireTime(sc.nextFireAt), h('div', { class: 'sub', testid: 'schedule-next-relative', text: sc.paused ? `${nextRel} · paused` : nextRel })]
      : h('span', { class: 'muted', title: 'The cron expression has no fire time left', text: '—' }),
    sc.bufferedFireAt
      ? h('div', {
        class: 'chip chip-buffered', testid: 'schedule-buffered',
        title: `Held by the buffer-one overlap policy: starts once the last run${sc.lastRunId ? ` (${sc.lastRunId})` : ''} has ended`,
      }, 'buffered ', fireTime(sc.bufferedFireAt))
      : null)],
    [`${sc.lastFireAt}|${lastRel}|${sc.lastRunId}`, () => h('td', { class: 'cell-fire', testid: 'schedule-last-fire' },
      last ? fireTime(sc.lastFireAt) : null,
      last || sc.lastRunId
        ? h('div', { class: 'sub' },
          last ? lastRel : null,
          last && sc.lastRunId ? ' · ' : null,
          sc.lastRunId
            ? h('a', {
              href: runHref(sc.lastRunId), 'data-nav': true, class: 'mono', testid: 'schedule-last-run',
              title: `The run this fire started: ${sc.lastRunId}`, text: `run ${shortId(sc.lastRunId)}`,
            })
            : null)
        : h('span', { class: 'muted', text: 'never' }))],
    [`${JSON.stringify(sc.skipped ?? null)}`, () => h('td', { class: 'cell-skipped', testid: 'schedule-skipped' }, skipped(sc.skipped), toggle)],
  ]);
}

// policies renders the misfire and overlap policies as two chips; catchup
// says its bound.
function policies(sc) {
  const misfire = sc.misfirePolicy || DEFAULT_POLICY;
  const overlap = sc.overlapPolicy || DEFAULT_POLICY;
  const chip = (kind, value, title) => h('span', { class: 'chip', 'data-policy': kind, title },
    h('span', { class: 'chip-label', text: kind }), ' ', value);
  return h('div', { class: 'policies' },
    chip('misfire', misfire === 'catchup' ? `catchup · max ${sc.maxCatchup || DEFAULT_MAX_CATCHUP}` : misfire,
      'What happens to fire times missed while nothing fired them'),
    chip('overlap', overlap, 'What happens to a fire time that comes due while the last run is still active'));
}

// skipped renders the count of skipped fire times, and the non-zero
// reasons: "24" over "12 misfire · 7 overlap · 3 catchup limit · 2 refused".
function skipped(counts) {
  const parts = SKIP_REASONS
    .map((r) => ({ ...r, n: Number(counts?.[r.field]) || 0 }))
    .filter((r) => r.n > 0);
  const total = parts.reduce((sum, r) => sum + r.n, 0);
  return [
    h('span', { class: `skip-total${total ? '' : ' is-zero'}`, testid: 'schedule-skipped-total', text: String(total) }),
    parts.length
      ? h('div', { class: 'skip-reasons' }, parts.map((r) => h('span', {
        class: `skip-reason skip-${r.tone}`, testid: 'schedule-skipped-reason', 'data-reason': r.reason, text: `${r.n} ${r.label}`,
      })))
      : null,
  ];
}

// fillSkips renders the recent skips of sc into its detail row, newest
// first (the API lists them oldest first); unchanged, it is left alone.
function fillSkips(detail, sc, now) {
  const list = Array.isArray(sc.recentSkips) ? sc.recentSkips.slice().reverse() : [];
  const sig = JSON.stringify(list) + list.map((k) => relativeTime(parseTime(k.recordedAt), now)).join('|');
  if (detail.dataset.sig === sig) return;
  detail.dataset.sig = sig;
  const tone = (reason) => SKIP_REASONS.find((r) => r.reason === reason)?.tone || 'neutral';
  const label = (reason) => SKIP_REASONS.find((r) => r.reason === reason)?.label || reason || '?';
  replace(detail, h('td', { colspan: COLUMNS },
    h('div', { class: 'skips' },
      h('div', { class: 'skips-head' },
        h('strong', { text: 'Recent skipped fires' }),
        h('span', { class: 'muted small', text: 'newest first; the counts above cover every skip' })),
      h('table', { class: 'table skips-table' },
        h('thead', {}, h('tr', {},
          h('th', { text: 'Reason' }), h('th', { text: 'Fire times' }), h('th', { class: 'num', text: 'Count' }),
          h('th', { text: 'Recorded' }), h('th', { text: 'Message' }))),
        h('tbody', {}, list.map((k) => h('tr', { class: 'skip-row', testid: 'schedule-skip-row', 'data-reason': k.reason },
          h('td', {}, h('span', { class: `etype etype-${tone(k.reason)}`, testid: 'schedule-skip-reason', text: label(k.reason) })),
          h('td', { class: 'nowrap', testid: 'schedule-skip-range' },
            fireTime(k.from), k.to && k.to !== k.from ? [' – ', fireTime(k.to)] : null),
          h('td', { class: 'num', testid: 'schedule-skip-count', text: String(k.count ?? '') }),
          h('td', { class: 'nowrap muted', title: dateTime(k.recordedAt), text: relativeTime(parseTime(k.recordedAt), now) }),
          h('td', { class: 'skip-message', testid: 'schedule-skip-message' },
            k.message ? k.message : h('span', { class: 'muted', text: '—' })))))))));
}

// fireTime is a <time> showing value in the viewer's zone; its datetime
// attribute is the API's string.
function fireTime(value) {
  return h('time', { class: 'fire-time', datetime: value, text: dateTime(value) });
}

function emptyRow() {
  return h('tr', { class: 'empty-row' }, h('td', { colspan: COLUMNS },
    h('div', { class: 'empty', testid: 'schedules-empty' },
      h('strong', { text: 'No schedules yet' }),
      h('span', { class: 'muted' },
        'Create one with ', h('code', { text: 'weft schedule create' }),
        ' (or POST /v1/schedules on the gateway); its fires show up here.'))));
}
