// The plans list: the registered plan versions of the tenant, newest first
// (GET /v1/plans of the gateway, read through the projector's gateway
// route, api.PlanVersionList), with cursor pagination and a refresh every
// 5 s while the tab is visible (pagedlist.js). Each row links to its
// plan's page, /plans/{planId}?projectId=P&version=V.

import { plansPath } from './api.js';
import { fillCells, h, pill, pollMs } from './dom.js';
import { dateTime, parseTime, relativeTime } from './format.js';
import { resourceList } from './pagedlist.js';

const POLL_MS = pollMs(5000);
const COLUMNS = 6;

// planHref is the address of the page of plan planId of project
// projectId in the UI; with version, that version is the one shown.
export function planHref(projectId, planId, version) {
  const query = new URLSearchParams({ projectId });
  if (version) query.set('version', version);
  return `/plans/${encodeURIComponent(planId)}?${query}`;
}

// versionState is the state pill's text of a plan version: ARCHIVED while
// it is archived (new starts by planRef are refused), else ACTIVE.
export function versionState(v) {
  return v.archivedAt ? 'ARCHIVED' : 'ACTIVE';
}

// shortDigest is the first 12 hex digits of a "sha256:…" digest.
export function shortDigest(digest) {
  return String(digest || '').replace(/^sha256:/, '').slice(0, 12);
}

// mountPlans draws the plans list into root and returns {unmount}.
export function mountPlans(root, view) {
  const tbody = h('tbody');
  const table = h('table', { class: 'table plans-table', testid: 'plans-table' },
    h('thead', {}, h('tr', {}, ['Plan', 'Version', 'Project', 'State', 'Registered', 'Digest'].map((text) => h('th', { text })))),
    tbody);
  const list = resourceList(root, {
    name: 'plans', field: 'versions', one: 'plan version', many: 'plan versions', title: 'Plans', table, tbody, view,
    intro: 'The registered plan versions of your tenant, newest first. Open one to see its steps and input schema, and to start a run of it.',
    path: plansPath,
    key: (v) => `${v.projectId}|${v.planId}|${v.planVersion}`,
    pollMs: POLL_MS,
    createRow: (v) => {
      const tr = h('tr', { class: 'plan-row', testid: 'plan-row', 'data-plan-id': v.planId, 'data-plan-version': v.planVersion, 'data-project-id': v.projectId });
      return { tr, nodes: [tr] };
    },
    fillRow: (r, v, now) => fillRow(r.tr, v, now),
    emptyRow,
  });
  list.start();
  return { unmount: () => list.stop() };
}

// fillRow renders plan version v into its row, cell by cell.
function fillRow(tr, v, now) {
  const created = parseTime(v.createdAt);
  const createdRel = created ? relativeTime(created, now) : '';
  fillCells(tr, [
    [`${v.projectId}|${v.planId}`, () => h('td', { class: 'cell-plan' },
      h('a', { href: planHref(v.projectId, v.planId), 'data-nav': true, class: 'plan-id', testid: 'plan-link', text: v.planId }))],
    [`${v.projectId}|${v.planId}|${v.planVersion}`, () => h('td', { testid: 'plan-version' },
      h('a', { href: planHref(v.projectId, v.planId, v.planVersion), 'data-nav': true, class: 'mono', text: v.planVersion }))],
    [v.projectId, () => h('td', { testid: 'plan-project', text: v.projectId })],
    [versionState(v), () => h('td', {}, pill(versionState(v), 'plan-state'))],
    [`${v.createdAt}|${createdRel}`, () => h('td', { class: 'cell-fire', testid: 'plan-created' },
      created ? [h('time', { datetime: v.createdAt, text: dateTime(v.createdAt) }), h('div', { class: 'sub', text: createdRel })] : '—')],
    [v.digest, () => h('td', {}, h('code', { class: 'small', testid: 'plan-digest', title: v.digest, text: shortDigest(v.digest) }))],
  ]);
}

function emptyRow() {
  return h('tr', { class: 'empty-row' }, h('td', { colspan: COLUMNS },
    h('div', { class: 'empty', testid: 'plans-empty' },
      h('strong', { text: 'No registered plans yet' }),
      h('span', { class: 'muted' },
        'Register one with ', h('code', { text: 'weft plan push -f plan.yaml' }),
        ' (or POST /v1/plans on the gateway); its versions show up here.'))));
}
