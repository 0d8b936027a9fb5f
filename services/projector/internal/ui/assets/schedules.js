// The schedules list: GET /v1/schedules of the gateway, read through the
// projector's gateway route, ordered by schedule id, with cursor
// pagination and a refresh every 5 s while the tab is visible (the list
// machinery is pagedlist.js), and each schedule's recent skipped fires on
// demand. Fire times show in the viewer's zone and, below, in the
// schedule's own; a paused schedule shows no next fire. A key that may
// start runs (run.start, GET /v1/whoami) gets each schedule's pause or
// resume and delete; the gateway still decides each request.

import { ApiError, scheduleAction, schedulesPath, whoami } from './api.js';
import { fillCells, h, icon, pill, pollMs, replace, runHref } from './dom.js';
import { dateTime, fromNow, parseTime, relativeTime, shortId } from './format.js';
import { resourceList } from './pagedlist.js';

const POLL_MS = pollMs(5000);
const COLUMNS = 9;
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
  let manage = false; // the key may pause, resume and delete schedules

  const tbody = h('tbody');
  const actionsHead = h('th', { class: 'cell-actions', text: 'Actions', hidden: true });
  const table = h('table', { class: 'table schedules-table', testid: 'schedules-table' },
    h('thead', {}, h('tr', {},
      ['Schedule', 'Plan', 'Cron', 'Policies', 'State', 'Next fire', 'Last fire', 'Skipped'].map((text) => h('th', { text })),
      actionsHead)),
    tbody);
  const list = resourceList(root, {
    name: 'schedules', one: 'schedule', title: 'Schedules', table, tbody, view,
    intro: 'The cron schedules of your tenant: when each fires next, what it started last, and the fires it skipped.',
    path: schedulesPath,
    key: (sc) => sc.scheduleId,
    pollMs: POLL_MS,
    createRow: (sc) => scheduleRows(sc.scheduleId),
    fillRow: (r, sc, now) => {
      fillRow(r, sc, now, manage ? act : null);
      fillSkips(r.detail, sc, now);
      showSkips(r, sc.scheduleId);
    },
    dropRow: (r, scheduleId) => expanded.delete(scheduleId),
    emptyRow,
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

  // act runs a schedule's action ('pause', 'resume' or 'delete', which
  // asks first) from button, tells how it went and reloads the list.
  async function act(sc, action, button) {
    const id = sc.scheduleId;
    if (action === 'delete') {
      const ok = await view.confirm({
        title: `Delete schedule ${id}?`,
        text: 'It stops firing and is removed; the runs it started go on.',
        ok: 'Delete schedule', dismiss: 'Keep it',
      });
      if (!ok) return;
    }
    button.disabled = true;
    try {
      await scheduleAction(id, action);
      view.toast({ kind: 'success', text: `Schedule ${id} ${{ pause: 'paused', resume: 'resumed', delete: 'deleted' }[action]}` });
    } catch (err) {
      view.toast({ kind: 'error', text: err instanceof ApiError ? err.describe() : String(err) });
    } finally {
      button.disabled = false;
      list.refresh();
    }
  }

  list.start();
  whoami().then((me) => {
    manage = Array.isArray(me.actions) && me.actions.includes('run.start');
    actionsHead.hidden = !manage;
    table.dataset.manage = String(manage);
    if (manage) list.refresh();
  }, () => { table.dataset.manage = 'false'; }); // Without the answer the page offers no action.

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
//
// act, when the key may manage schedules, is (sc, action, button) → run
// the action; null hides the actions cell.
function fillRow({ tr, toggle }, sc, now, act) {
  const zone = sc.timezone || DEFAULT_TIMEZONE;
  const next = sc.paused ? null : parseTime(sc.nextFireAt);
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
    [`${sc.nextFireAt}|${nextRel}|${sc.paused}|${sc.bufferedFireAt}|${sc.lastRunId}|${zone}`, () => h('td', {
      class: `cell-fire${sc.paused ? ' is-paused' : ''}`, testid: 'schedule-next-fire',
    },
    nextFire(sc, next, nextRel, zone),
    sc.bufferedFireAt && !sc.paused
      ? h('div', {
        class: 'chip chip-buffered', testid: 'schedule-buffered',
        title: `Held by the buffer-one overlap policy: starts once the last run${sc.lastRunId ? ` (${sc.lastRunId})` : ''} has ended`,
      }, 'buffered ', fireTime(sc.bufferedFireAt))
      : null)],
    [`${sc.lastFireAt}|${lastRel}|${sc.lastRunId}|${zone}`, () => h('td', { class: 'cell-fire', testid: 'schedule-last-fire' },
      last ? fireTime(sc.lastFireAt, zone) : null,
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
    [`${Boolean(act)}|${sc.paused}`, () => h('td', { class: 'cell-actions', hidden: !act }, act ? actions(sc, act) : null)],
  ]);
}

// nextFire renders the next fire time: none for a paused schedule (it
// fires nothing until resumed) or one with no fire time left.
function nextFire(sc, next, nextRel, zone) {
  if (sc.paused) {
    return [h('span', { class: 'muted', title: 'A paused schedule fires nothing until it is resumed', text: '—' }),
      h('div', { class: 'sub', testid: 'schedule-next-relative', text: 'paused' })];
  }
  if (!next) return h('span', { class: 'muted', title: 'The cron expression has no fire time left', text: '—' });
  return [fireTime(sc.nextFireAt, zone), h('div', { class: 'sub', testid: 'schedule-next-relative', text: nextRel })];
}

// actions renders a schedule's buttons: Pause or Resume, and Delete.
function actions(sc, act) {
  const button = (action, label, iconName, extra = '') => {
    const b = h('button', {
      type: 'button', class: `btn btn-sm${extra}`, testid: `schedule-${action}`, 'data-schedule-id': sc.scheduleId,
    }, icon(iconName), label);
    b.addEventListener('click', () => act(sc, action, b));
    return b;
  };
  return h('div', { class: 'schedule-actions', role: 'group', 'aria-label': `Schedule ${sc.scheduleId}` },
    sc.paused ? button('resume', 'Resume', 'play') : button('pause', 'Pause', 'pause'),
    button('delete', 'Delete', 'x', ' btn-danger'));
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
// attribute is the API's string. With zone (the schedule's), when it is
// not the viewer's, the same instant follows in that zone.
function fireTime(value, zone) {
  const viewer = viewerZone();
  const el = h('time', { class: 'fire-time', datetime: value, title: `your time (${viewer})`, text: dateTime(value) });
  if (!zone || zone === viewer) return el;
  const there = dateTime(value, zone);
  if (there === null) return el; // a zone this browser does not know
  return [el, h('div', { class: 'zone-time', testid: 'schedule-zone-time', 'data-zone': zone, title: `the schedule's time (${zone})` },
    there, ' ', h('span', { class: 'zone-name', text: zone }))];
}

// viewerZone is the viewer's IANA time zone ("Europe/Paris").
function viewerZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

function emptyRow() {
  return h('tr', { class: 'empty-row' }, h('td', { colspan: COLUMNS },
    h('div', { class: 'empty', testid: 'schedules-empty' },
      h('strong', { text: 'No schedules yet' }),
      h('span', { class: 'muted' },
        'Create one with ', h('code', { text: 'weft schedule create' }),
        ' (or POST /v1/schedules on the gateway); its fires show up here.'))));
}
