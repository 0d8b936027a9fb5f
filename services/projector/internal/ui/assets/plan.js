// A registered plan's page, /plans/{planId}?projectId=P[&version=V]: its
// versions, newest first (GET /v1/plans/{planId} of the gateway, through
// the projector's gateway route), which of them is latest and which are
// archived; and for the version shown (version=, else latest, else the
// newest): its steps graph, its inputSchema and "Start run"
// (planstart.js). A key that may start runs (run.start, GET /v1/whoami)
// gets Start and the version's Archive or Restore; the gateway still
// decides each request.

import { ApiError, get, planPath, planVersionAction, whoami } from './api.js';
import { createDag } from './dag.js';
import { h, icon, pill, replace } from './dom.js';
import { dateTime, parseTime, relativeTime } from './format.js';
import { jsonBlock } from './jsonview.js';
import { planHref, shortDigest, versionState } from './plans.js';
import { createStartForm } from './planstart.js';

// mountPlan draws the page of plan planId into root; params are the
// address's query (projectId, version). It returns {unmount}.
export function mountPlan(root, view, planId, params) {
  const projectId = params.get('projectId') || '';
  const wanted = params.get('version') || '';
  const ac = new AbortController();
  const errorBox = h('div', { class: 'inline-error', role: 'alert', hidden: true, testid: 'plan-error' });
  const body = h('div', { class: 'plan-body' });
  let dag = null;

  replace(root,
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
      h('a', { href: '/plans', 'data-nav': true, text: 'Plans' }), h('span', { class: 'crumb-sep', text: '/' }),
      h('span', { class: 'mono', text: planId })),
    h('div', { class: 'page-head' },
      h('div', {},
        h('div', { class: 'eyebrow', text: 'Plan' }),
        h('h1', { class: 'plan-title', testid: 'plan-id', text: planId }),
        h('p', { class: 'muted', testid: 'plan-page-project', text: projectId ? `project ${projectId}` : '' }))),
    errorBox,
    body);

  function showError(text) {
    errorBox.hidden = !text;
    replace(errorBox, text ? [icon('alert'), text] : []);
  }

  // state is what the page shows: the plan and the versions loaded (its
  // pages so far), the version shown with its plan, and whether the key
  // may start runs.
  const state = { plan: null, versions: [], nextCursor: null, version: null, manage: false };
  const versionsSlot = h('div');

  // load reads the plan's first page of versions, the key's actions and
  // the version shown, and draws them; it is called again after an
  // archive or a restore.
  async function load() {
    if (!projectId) {
      showError('This address names no project: a plan is named within its project (?projectId=).');
      return;
    }
    try {
      const [planRes, me] = await Promise.all([
        get(planPath(projectId, planId), { signal: ac.signal }),
        whoami().catch(() => ({})), // Without the answer the page offers no action.
      ]);
      const plan = planRes.data || {};
      Object.assign(state, {
        plan, versions: plan.versions || [], nextCursor: plan.nextCursor || null, version: null,
        manage: Array.isArray(me.actions) && me.actions.includes('run.start'),
      });
      const shown = wanted || plan.latest || plan.versions?.[0]?.planVersion;
      if (shown) state.version = (await get(planPath(projectId, planId, { version: shown }), { signal: ac.signal })).data;
      showError(null);
    } catch (err) {
      if (ac.signal.aborted) return;
      showError(failure(err));
    }
    if (state.plan) draw(); // the versions, even when the version asked for is not one of them
  }

  // more appends the next page of the plan's versions.
  async function more(button) {
    button.disabled = true;
    try {
      const res = await get(planPath(projectId, planId, { cursor: state.nextCursor }), { signal: ac.signal });
      const known = new Set(state.versions.map((v) => v.planVersion));
      state.versions = state.versions.concat((res.data?.versions || []).filter((v) => !known.has(v.planVersion)));
      state.nextCursor = res.data?.nextCursor || null;
      drawVersions();
    } catch (err) {
      if (!ac.signal.aborted) showError(`Could not load more versions — ${err.describe ? err.describe() : err.message}`);
      button.disabled = false;
    }
  }

  function drawVersions() {
    replace(versionsSlot, versionsCard(state, more));
  }

  function draw() {
    const { version } = state;
    dag?.destroy();
    dag = null;
    drawVersions();
    const cards = [versionsSlot];
    if (version) {
      dag = createDag({ plain: true });
      cards.push(
        versionHead(version, state.plan.latest, state.manage ? act : null),
        h('section', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', { text: 'Steps' }), h('div', { class: 'card-head-end' }, dag.controls)),
          dag.el),
        h('div', { class: 'plan-pair' }, schemaCard(version), startCard(view, version, state.manage)));
    }
    replace(body, cards);
    dag?.update({ plan: version.plan });
  }

  // act archives or restores version (restore at once, archive once
  // confirmed), tells how it went and draws the page again.
  async function act(version, action, button) {
    const name = `${version.planId}@${version.planVersion}`;
    if (action === 'archive') {
      const ok = await view.confirm({
        title: `Archive ${name}?`,
        text: 'New starts of this version are refused (and "latest" passes over it) until it is restored; runs already started go on.',
        ok: 'Archive version', dismiss: 'Keep it',
      });
      if (!ok) return;
    }
    button.disabled = true;
    try {
      await planVersionAction(projectId, planId, version.planVersion, action);
      view.toast({ kind: 'success', text: `${name} ${action === 'archive' ? 'archived' : 'restored'}` });
    } catch (err) {
      view.toast({ kind: 'error', text: err instanceof ApiError ? err.describe() : String(err) });
    } finally {
      button.disabled = false;
      load();
    }
  }

  load();
  return {
    unmount() {
      ac.abort();
      dag?.destroy();
    },
  };
}

// failure says why the plan or its version could not be shown: the
// gateway's message for one it does not have (it names the project).
function failure(err) {
  if (err instanceof ApiError && err.status === 404) return err.message;
  return `Could not load the plan — ${err.describe ? err.describe() : err.message}`;
}

// versionsCard lists the versions loaded of the plan ({plan, versions,
// nextCursor, version}), newest first, each linking to its page, and
// marks the one shown; more(button) loads the next page.
function versionsCard({ plan, versions, nextCursor, version }, more) {
  const shown = version?.planVersion;
  const now = Date.now();
  let loadMore = null;
  if (nextCursor) {
    loadMore = h('button', { type: 'button', class: 'btn btn-sm', testid: 'plan-versions-more', text: 'Load more versions' });
    loadMore.addEventListener('click', () => more(loadMore));
  }
  return h('section', { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', { text: 'Versions' }),
      h('span', { class: 'muted small', testid: 'plan-latest',
        text: plan.latest ? `latest: ${plan.latest}` : 'every version is archived: latest resolves to none' })),
    h('div', { class: 'table-scroll' }, h('table', { class: 'table compact', testid: 'plan-versions' },
      h('thead', {}, h('tr', {}, ['Version', 'State', 'Registered', 'Digest'].map((text) => h('th', { text })))),
      h('tbody', {}, versions.map((v) => {
        const created = parseTime(v.createdAt);
        return h('tr', {
          class: `plan-version-row${v.planVersion === shown ? ' is-selected' : ''}`, testid: 'plan-version-row',
          'data-plan-version': v.planVersion, 'aria-current': v.planVersion === shown ? 'true' : null,
        },
        h('td', {},
          h('a', { href: planHref(plan.projectId, plan.planId, v.planVersion), 'data-nav': true, class: 'mono', testid: 'plan-version-link', text: v.planVersion }),
          v.planVersion === plan.latest ? h('span', { class: 'chip chip-quiet', testid: 'plan-version-latest', text: 'latest' }) : null),
        h('td', {}, pill(versionState(v), 'plan-version-state')),
        h('td', { class: 'nowrap', title: dateTime(v.createdAt) || '', text: created ? relativeTime(created, now) : '—' }),
        h('td', {}, h('code', { class: 'small', title: v.digest, text: shortDigest(v.digest) })));
      })))),
    loadMore ? h('div', { class: 'list-foot' }, loadMore) : null);
}

// versionHead is the title of the version shown: its name, state and
// digest, and, with act, its Archive or Restore.
function versionHead(version, latest, act) {
  let action = null;
  if (act) {
    const archived = Boolean(version.archivedAt);
    action = h('button', { type: 'button', class: `btn btn-sm${archived ? '' : ' btn-danger'}`, testid: archived ? 'plan-restore' : 'plan-archive' },
      icon(archived ? 'retry' : 'x'), archived ? 'Restore' : 'Archive');
    action.addEventListener('click', () => act(version, archived ? 'restore' : 'archive', action));
  }
  return h('section', { class: 'card plan-version-head', testid: 'plan-version', 'data-plan-version': version.planVersion },
    h('div', { class: 'plan-version-title' },
      h('h2', {}, 'Version ', h('span', { class: 'mono', testid: 'plan-version-shown', text: version.planVersion })),
      pill(versionState(version), 'plan-version-shown-state'),
      version.planVersion === latest ? h('span', { class: 'chip chip-quiet', text: 'latest' }) : null,
      h('code', { class: 'small muted', title: version.digest, text: version.digest })),
    action);
}

// schemaCard shows the version's inputSchema, or says it has none.
function schemaCard(version) {
  const schema = version.plan?.inputSchema;
  return h('section', { class: 'card', testid: 'plan-schema-card' },
    h('div', { class: 'card-head' }, h('h2', { text: 'Input schema' })),
    h('div', { class: 'plan-card-body' },
      schema === undefined
        ? h('p', { class: 'muted', testid: 'plan-schema-none', text: 'This version declares no inputSchema: any input is accepted.' })
        : jsonBlock('inputSchema', schema, 'plan-schema')));
}

// startCard holds "Start run" for a key that may start runs, and says why
// there is none for another.
function startCard(view, version, manage) {
  return h('section', { class: 'card', testid: 'plan-start-card' },
    h('div', { class: 'card-head' }, h('h2', { text: 'Start run' })),
    h('div', { class: 'plan-card-body' },
      manage
        ? createStartForm(view, version)
        : h('p', { class: 'muted', testid: 'plan-start-denied', text: 'This API key may not start runs (it lacks run.start).' })));
}
