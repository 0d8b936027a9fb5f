// The triggers list: GET /v1/triggers of the gateway, read through the
// projector's gateway route, ordered by trigger id, with cursor pagination
// and a refresh every 5 s while the tab is visible (pagedlist.js). Each
// row shows the trigger's plan, its input expression, how to send it an
// event, and its last events with the runs they started: the runs whose
// run request id is "{triggerId}:{eventId}" (GET /v1/runs?trigger=ID),
// read again with every refresh of the list. A trigger that refused events
// (a payload its plan's schema refused, an archived planRef, …) shows how
// many, and the last ones with their reasons, as a schedule shows its
// skipped fires.

import { get, triggersPath } from './api.js';
import { fillCells, h, pill, pollMs, replace, runHref } from './dom.js';
import { dateTime, parseTime, relativeTime, shortId } from './format.js';
import { resourceList } from './pagedlist.js';

const POLL_MS = pollMs(5000);
const COLUMNS = 6;
// LAST_EVENTS is how many of a trigger's latest events its row shows.
const LAST_EVENTS = 5;

// mountTriggers draws the triggers list into root and returns {unmount}.
export function mountTriggers(root, view) {
  const tbody = h('tbody');
  const table = h('table', { class: 'table triggers-table', testid: 'triggers-table' },
    h('thead', {}, h('tr', {}, ['Trigger', 'Plan', 'Run input', 'Created', 'Send an event', 'Last events'].map((text) => h('th', { text })))),
    tbody);

  const ac = new AbortController();
  const loading = new Set(); // triggerIds whose last events are being read
  const rows = new Map(); // triggerId → its row's last-events cell

  // loadEvents reads the last events of each trigger shown (one request
  // at a time per trigger) and draws them into its row.
  function loadEvents(triggers) {
    for (const tr of triggers) {
      const id = tr.triggerId;
      if (loading.has(id)) continue;
      loading.add(id);
      get(`/v1/runs?${new URLSearchParams({ trigger: id, limit: LAST_EVENTS })}`, { signal: ac.signal })
        .then((res) => res.data?.runs || [], (err) => (ac.signal.aborted ? null : err))
        .then((runs) => {
          const cell = rows.get(id);
          if (runs && cell) drawEvents(cell, id, runs, Date.now());
        })
        .finally(() => loading.delete(id));
    }
  }

  const list = resourceList(root, {
    name: 'triggers', one: 'trigger', title: 'Triggers', table, tbody, view,
    intro: 'The event triggers of your tenant: each event sent to one starts a run of its plan.',
    path: triggersPath,
    key: (tr) => tr.triggerId,
    pollMs: POLL_MS,
    createRow: (tr) => {
      const row = h('tr', { class: 'trigger-row', testid: 'trigger-row', 'data-trigger-id': tr.triggerId });
      const events = h('td', { class: 'cell-events', testid: 'trigger-events' }, h('span', { class: 'muted', text: '…' }));
      rows.set(tr.triggerId, events);
      return { tr: row, events, nodes: [row] };
    },
    fillRow: (r, tr, now) => {
      fillRow(r.tr, tr, now);
      if (!r.events.isConnected) r.tr.append(r.events);
    },
    dropRow: (r, triggerId) => rows.delete(triggerId),
    emptyRow,
    onDraw: (drawn) => loadEvents(drawn.items),
  });
  list.start();
  return {
    unmount: () => {
      ac.abort();
      list.stop();
    },
  };
}

// drawEvents draws into cell the last events of trigger triggerId: runs,
// newest first, as GET /v1/runs?trigger= answers them, or the error that
// kept them from being read.
function drawEvents(cell, triggerId, runs, now) {
  if (runs instanceof Error) {
    delete cell.dataset.sig;
    replace(cell, h('span', { class: 'muted', testid: 'trigger-events-error',
      text: `Could not load its events — ${runs.describe ? runs.describe() : runs.message}` }));
    return;
  }
  if (runs.length === 0) {
    delete cell.dataset.sig;
    replace(cell, h('span', { class: 'muted', testid: 'trigger-events-none', text: 'No events yet' }));
    return;
  }
  const prefix = `${triggerId}:`;
  const sig = runs.map((run) => `${run.runId}|${run.status}|${run.createdAt}|${relativeTime(parseTime(run.createdAt), now)}`).join(',');
  if (cell.dataset.sig === sig) return; // unchanged: a focused link keeps its focus
  cell.dataset.sig = sig;
  replace(cell,
    h('ul', { class: 'trigger-events' }, runs.map((run) => {
      const eventId = run.runRequestId?.startsWith(prefix) ? run.runRequestId.slice(prefix.length) : '';
      const created = parseTime(run.createdAt);
      return h('li', { testid: 'trigger-event', 'data-event-id': eventId },
        h('span', { class: 'mono small event-id', title: eventId, text: eventId || '—' }),
        h('a', { href: runHref(run.runId), 'data-nav': true, class: 'mono small', testid: 'trigger-event-run',
          title: run.runId, text: shortId(run.runId) }),
        pill(run.status, 'trigger-event-status'),
        created ? h('time', { class: 'sub', datetime: run.createdAt, title: dateTime(run.createdAt), text: relativeTime(created, now) }) : null);
    })),
    h('a', { href: `/?${new URLSearchParams({ trigger: triggerId })}`, 'data-nav': true, class: 'small',
      testid: 'trigger-runs-link', text: 'All its runs' }));
}

// fillRow renders trigger tr into its row, cell by cell.
function fillRow(row, tr, now) {
  const created = parseTime(tr.createdAt);
  const createdRel = created ? relativeTime(created, now) : '';
  const refused = tr.refusedEvents || 0;
  fillCells(row, [
    [`${tr.triggerId}|${tr.projectId}|${tr.environmentId}|${refused}`, () => h('td', { class: 'cell-schedule' },
      h('span', { class: 'mono schedule-id', title: tr.triggerId, text: tr.triggerId }),
      h('div', { class: 'sub', text: [tr.projectId, tr.environmentId].filter(Boolean).join(' · ') }),
      refused > 0 ? refusals(tr, now) : null)],
    [`${tr.planId}@${tr.planVersion}`, () => h('td', { class: 'cell-plan', testid: 'trigger-plan' },
      h('span', { class: 'plan-id', text: tr.planId || '—' }),
      tr.planVersion ? h('span', { class: 'plan-version', text: `@${tr.planVersion}` }) : null)],
    [`${tr.input}`, () => h('td', { testid: 'trigger-input' },
      tr.input ? h('code', { class: 'cron', text: tr.input }) : h('span', { class: 'muted', text: 'the event’s payload' }))],
    [`${tr.createdAt}|${createdRel}`, () => h('td', { class: 'cell-fire', testid: 'trigger-created' },
      created ? [h('time', { datetime: tr.createdAt, text: dateTime(tr.createdAt) }), h('div', { class: 'sub', text: createdRel })] : '—')],
    [tr.triggerId, () => h('td', { testid: 'trigger-send' },
      h('code', { class: 'small', text: `weft trigger send ${tr.triggerId}` }))],
  ]);
}

// REFUSALS_SHOWN is how many of a trigger's last refused events its row
// lists.
const REFUSALS_SHOWN = 5;

// refusals renders trigger tr's refused events: their count, and the last
// ones with the reason each was refused.
function refusals(tr, now) {
  const n = tr.refusedEvents;
  return h('details', { class: 'trigger-refusals', testid: 'trigger-refusals' },
    h('summary', { class: 'small warn', text: n === 1 ? '1 refused event' : `${n} refused events` }),
    h('ul', {}, (tr.recentRefusals || []).slice(0, REFUSALS_SHOWN).map((r) => {
      const at = parseTime(r.at);
      return h('li', { testid: 'trigger-refusal', 'data-event-id': r.eventId },
        h('span', { class: 'mono small', text: r.eventId }), ' ',
        h('span', { class: 'small', text: `${r.code}: ${r.message}` }), ' ',
        at ? h('time', { class: 'sub', datetime: r.at, title: dateTime(r.at), text: relativeTime(at, now) }) : null);
    })));
}

function emptyRow() {
  return h('tr', { class: 'empty-row' }, h('td', { colspan: COLUMNS },
    h('div', { class: 'empty', testid: 'triggers-empty' },
      h('strong', { text: 'No triggers yet' }),
      h('span', { class: 'muted' }, 'Create one with POST /v1/triggers on the gateway; its events start runs.'))));
}
