// The triggers list: GET /v1/triggers of the gateway, read through the
// projector's gateway route, ordered by trigger id, with cursor pagination
// and a refresh every 5 s while the tab is visible (pagedlist.js). Each
// row shows the trigger's plan, its input expression and how to send it an
// event.

import { triggersPath } from './api.js';
import { fillCells, h } from './dom.js';
import { dateTime, parseTime, relativeTime } from './format.js';
import { countText, listPage, pagedList } from './pagedlist.js';

const POLL_MS = 5000;
const COLUMNS = 5;

// mountTriggers draws the triggers list into root and returns {unmount}.
export function mountTriggers(root, view) {
  const tbody = h('tbody');
  const table = h('table', { class: 'table triggers-table', testid: 'triggers-table' },
    h('thead', {}, h('tr', {}, ['Trigger', 'Plan', 'Run input', 'Created', 'Send an event'].map((text) => h('th', { text })))),
    tbody);
  const { summary, errorBox, loadMore } = listPage(root, {
    name: 'triggers', title: 'Triggers', table,
    intro: 'The event triggers of your tenant: each event sent to one starts a run of its plan.',
  });

  const list = pagedList({
    view, tbody, errorBox, loadMore,
    path: triggersPath,
    field: 'triggers',
    key: (tr) => tr.triggerId,
    noun: 'triggers',
    pollMs: POLL_MS,
    createRow: (tr) => {
      const row = h('tr', { class: 'trigger-row', testid: 'trigger-row', 'data-trigger-id': tr.triggerId });
      return { tr: row, nodes: [row] };
    },
    fillRow: (r, tr, now) => fillRow(r.tr, tr, now),
    emptyRow,
    onDraw(drawn) {
      summary.textContent = countText(drawn, 'trigger', 'triggers');
    },
  });
  list.start();
  return { unmount: () => list.stop() };
}

// fillRow renders trigger tr into its row, cell by cell.
function fillRow(row, tr, now) {
  const created = parseTime(tr.createdAt);
  const createdRel = created ? relativeTime(created, now) : '';
  fillCells(row, [
    [`${tr.triggerId}|${tr.projectId}|${tr.environmentId}`, () => h('td', { class: 'cell-schedule' },
      h('span', { class: 'mono schedule-id', title: tr.triggerId, text: tr.triggerId }),
      h('div', { class: 'sub', text: [tr.projectId, tr.environmentId].filter(Boolean).join(' · ') }))],
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

function emptyRow() {
  return h('tr', { class: 'empty-row' }, h('td', { colspan: COLUMNS },
    h('div', { class: 'empty', testid: 'triggers-empty' },
      h('strong', { text: 'No triggers yet' }),
      h('span', { class: 'muted' }, 'Create one with POST /v1/triggers on the gateway; its events start runs.'))));
}
