// Weft UI: entry point, router, sign-in, toasts and the confirm dialog.
//
// Routes (path routing; the server answers index.html for each):
//   /                 runs list; filters in the query: ?status=FAILED&plan=hello,
//                     ?trigger=T (a trigger's runs), ?parent=RUN_ID (a run's child runs)
//   /runs/{runId}     run page; ?step=STEP_ID opens the step's panel (and follows it)
//   /schedules        schedules list, read from the gateway through the
//                     projector's /gateway/ route (GET /gateway/v1/schedules)
//   /triggers         triggers list, read the same way (GET /gateway/v1/triggers)
//   /plans            registered plan versions, read the same way (GET /gateway/v1/plans)
//   /plans/{planId}?projectId=P[&version=V]   a registered plan's page: its
//                     versions, and the version shown's steps, schema and start
// The API key comes from #token=KEY (never ?token=KEY) once, then from
// localStorage "weft.token".
//
// Stable data-testid attributes, for browser tests:
//   signin-token            the API key input of the sign-in form
//   signin-submit           its submit button
//   signin-error            the reason the form is shown again (e.g. after a 401)
//   signin-dev-token        where the dev stack's key is; present only on a `weft dev` stack,
//                           its file in signin-dev-token-file (".weft/dev/token")
//   signout                 the header's sign-out button
//   runs-table              the runs table
//   run-row                 one row; data-run-id is the full run id
//   run-row-parent          in a child run's row, the link to its parent run (parentRunId)
//   run-status              a run's status pill; text is exactly the status (COMPLETED)
//   stale-pill              the STALE pill beside a stale run's status
//   filter-status           the status filter <select> (values incl. STALE)
//   filter-plan             the plan id filter <input>
//   filter-trigger, filter-parent   the chips of the trigger= and parent= filters (text "trigger T",
//                           "child runs of <short id>"; filter-parent's data-run-id is the parent),
//                           each with its remove button: filter-trigger-remove, filter-parent-remove
//   filter-clear            "Clear filters"
//   load-more               the "Load more" button (cursor pagination) of the runs, schedules, triggers and plans lists
//   stale-banner            the run page's STALE alert (role=alert), present only while stale
//   run-error               the root cause of a FAILED run
//   btn-pause, btn-resume, btn-cancel   the run's action buttons
//   btn-retry-step          "Retry step" on a FAILED step; data-step-id
//   btn-signal              "Send <signal>" on a RUNNING waitSignal step; data-step-id, data-signal
//   btn-rerun-step          "Rerun from here" on every step of an ended run, for a key with run.start; data-step-id
//   steps-card              the Steps card; data-rerun is "unknown" until GET /v1/whoami answered, then
//                           "true" when its steps offer a rerun, else "false"
//   rerun-form              the rerun card: rerun-from (the step), rerun-input (the JSON editor, the run's
//                           input), rerun-submit, rerun-close; rerun-problems holds rerun-json-error (input
//                           that is not JSON, nothing sent) or rerun-error (the gateway's refusal) and one
//                           rerun-problem per problem it names (cells as plan-start-problem's)
//   run-rerun-of            a rerun's "Rerun of <run> from <step>" (data-run-id, data-step-id): run-rerun-of-link
//                           (the source's page), run-rerun-of-step (the source's page with the step open)
//   step-reused             on a step a rerun copied rather than ran, "reused, not run" (data-run-id), with
//                           step-reused-link to the run whose outcome it holds
//   confirm-ok, confirm-dismiss         the buttons of the confirm dialog (CANCEL)
//   action-result           the toast with the last action's result; data-kind success|error
//   dag                     the steps graph: a box that scrolls both ways (drag to pan); data-scale is its zoom
//   dag-zoom                the zoom level shown ("100%"); dag-zoom-in, dag-zoom-out, dag-fit (zoom to
//                           fit the whole graph in the box), dag-zoom-reset (back to 100%)
//   step                    one step node; data-step-id
//   step-status             its status pill; text is exactly the step status
//   step-attempt            "Retry #n" (present when logicalAttemptId > 1)
//   step-delivery           "delivery k" (present when engineAttemptId > 1)
//   step-error              a step's error code and message
//   step-artifact           an artifact link
//   step-subplan            a subPlan step's line ("starts a child run of plan@v"); its node has
//                           data-kind="subPlan" and the class node-subplan
//   step-child-run          on a subPlan node, the link to the child run its current attempt started
//                           (data-run-id); absent until it started one
//   detail-child-run        in the step panel of a subPlan step: detail-child-run-link (the child's
//                           page, data-run-id) or detail-child-run-none before it started;
//                           foreach-child-run, the same per element of a forEach over a subPlan step
//   run-parent              a child run's breadcrumb to its parent (data-run-id, data-step-id, data-depth):
//                           run-parent-link (the parent's page), run-parent-step (the parent's page with
//                           the step open: /runs/{parent}?step={stepId})
//   run-depth               a child run's chip "child run · depth N"
//   run-children-link       "Child runs" (/?parent=RUN_ID), on the page of a run with subPlan steps
//   events-table            the event timeline
//   event-row               one event; data-seq is its runSeq
//   event-toggle            shows or hides an event's eventData
//   nav-runs, nav-schedules, nav-triggers, nav-plans   the top nav's links; the current page's has aria-current="page"
//   plans-table, plan-row (data-plan-id, data-plan-version, data-project-id), plan-link (to the plan's page),
//   plan-version, plan-project, plan-state (ACTIVE|ARCHIVED), plan-created, plan-digest,
//   plans-summary, plans-empty, plans-error   the plans list, as the schedules'
//   plan-id, plan-page-project, plan-error   a plan's page: its id and project; why it could not be shown
//   plan-versions, plan-version-row (data-plan-version; aria-current on the one shown), plan-version-link,
//   plan-version-state, plan-version-latest, plan-latest   its versions, newest first
//   plan-version (data-plan-version), plan-version-shown, plan-version-shown-state   the version shown
//   plan-archive, plan-restore   its Archive (asks in the confirm dialog) or Restore, for a key with run.start
//   plan-schema (-json), plan-schema-none   its inputSchema, or the note that it has none
//   plan-start-form, plan-start-env, plan-start-input, plan-start-submit   "Start run", for a key with run.start;
//                           plan-start-denied instead for another, plan-start-archived under an archived version's
//   plan-start-problems     what is wrong with the last Start: plan-start-json-error (input that is not JSON,
//                           nothing sent) or plan-start-error (the gateway's refusal), and one plan-start-problem
//                           per problem it names (data-path, data-keyword, data-code; cells problem-path,
//                           problem-keyword, problem-message)
//   triggers-table, trigger-row (data-trigger-id), trigger-plan, trigger-input, trigger-created,
//   trigger-send, triggers-summary, triggers-empty, triggers-error   the triggers list, as the schedules'
//   schedules-table         the schedules table
//   schedules-summary       the count of schedules shown ("3 schedules", "50+ schedules")
//   schedules-empty         the empty state ("No schedules yet"), present only with no schedule
//   schedules-error         the inline error of the last failed refresh, shown only while failing
//   schedule-row            one schedule; data-schedule-id is its id
//   schedule-plan           its plan: planId@planVersion
//   schedule-cron           its cron expression and zone: "0 9 * * 1-5 · Europe/Paris"
//   schedule-policies       its policies; one chip each, data-policy misfire|overlap
//   schedule-state          its state pill; text is exactly ACTIVE or PAUSED
//   schedules-table         also carries data-manage="true|false" once GET /v1/whoami has said
//                           whether the key may manage schedules (run.start)
//   schedule-next-fire      the next fire time: a <time datetime> (the API's string, shown in the
//                           viewer's zone) and schedule-next-relative ("in 2h", "due 3m ago");
//                           "—" when none, and "—" with schedule-next-relative "paused" when paused
//   schedule-zone-time      beside a fire time, the same instant in the schedule's zone when it is
//                           not the viewer's; data-zone is the zone
//   schedule-pause, schedule-resume, schedule-delete   a schedule's actions (data-schedule-id), shown
//                           only to a key that may manage schedules; delete asks in the confirm dialog
//   schedule-buffered       the fire time buffer-one holds (a <time datetime>), present only then
//   schedule-last-fire      the last fire time: a <time datetime> and schedule-last-run, or "never"
//   schedule-last-run       the link to the run the last fire started (/runs/{lastRunId})
//   schedule-skipped        the skipped fires: schedule-skipped-total, and a
//                           schedule-skipped-reason per non-zero reason; data-reason misfire|overlap|catchup_limit|refused
//   schedule-skips-toggle   shows or hides a schedule's recent skips (aria-expanded); hidden when it has none
//   schedule-skips          the row of recent skips under a schedule, hidden until toggled; data-schedule-id
//   schedule-skip-row       one skip record, newest first; data-reason; cells schedule-skip-reason,
//                           schedule-skip-range (one <time datetime>, or two for from–to),
//                           schedule-skip-count, schedule-skip-message

import { captureTokenFromURL, clearToken, getToken, setToken } from './api.js';
import { h, icon, replace } from './dom.js';
import { mountPlan } from './plan.js';
import { mountPlans } from './plans.js';
import { mountRun } from './run.js';
import { mountRuns } from './runs.js';
import { mountSchedules } from './schedules.js';
import { mountTriggers } from './triggers.js';

const app = document.getElementById('app');
const signout = document.getElementById('signout');
const live = document.getElementById('live');
const liveText = document.getElementById('live-text');

// current is the mounted view: {unmount()}.
let current = null;
let signInShown = false;

function unmount() {
  if (current) current.unmount();
  current = null;
  setLive(null);
}

// render draws the view of the current address. notice ({text, kind:
// 'error'|'info'}) is shown on the sign-in form when there is no key.
function render(notice) {
  unmount();
  signInShown = false;
  if (!getToken()) {
    showSignIn(notice);
    return;
  }
  signout.hidden = false;
  const path = location.pathname;
  markNav(path);
  const view = { navigate, setLive, toast, confirm: confirmDialog };
  let m;
  if (path === '/' || path === '') {
    document.title = 'Runs · Weft';
    current = mountRuns(app, view);
  } else if (path === '/schedules') {
    document.title = 'Schedules · Weft';
    current = mountSchedules(app, view);
  } else if (path === '/triggers') {
    document.title = 'Triggers · Weft';
    current = mountTriggers(app, view);
  } else if (path === '/plans') {
    document.title = 'Plans · Weft';
    current = mountPlans(app, view);
  } else if ((m = path.match(/^\/plans\/([^/]+)$/))) {
    const planId = decodeSegment(m[1]);
    document.title = `Plan ${planId} · Weft`;
    current = mountPlan(app, view, planId, new URLSearchParams(location.search));
  } else if ((m = path.match(/^\/runs\/([^/]+)$/))) {
    const runId = decodeSegment(m[1]);
    document.title = `Run ${runId} · Weft`;
    current = mountRun(app, view, runId);
  } else {
    document.title = 'Not found · Weft';
    replace(app, h('div', { class: 'empty-page' },
      h('h1', { text: 'Page not found' }),
      h('p', {}, 'Nothing lives at ', h('code', { text: path }), '. ',
        h('a', { href: '/', 'data-nav': true, text: 'Back to runs' }))));
  }
}

// decodeSegment decodes a path segment, or keeps it as it is when it is
// not valid percent-encoding.
function decodeSegment(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

// markNav marks the top nav's link of the page at path as the current one:
// Runs for the runs list and a run's page, Plans for the plans list and a
// plan's page, Schedules and Triggers for theirs.
function markNav(path) {
  let section = null;
  if (path === '/schedules' || path === '/triggers' || path === '/plans') section = path;
  else if (path.startsWith('/plans/')) section = '/plans';
  else if (path === '/' || path.startsWith('/runs/')) section = '/';
  for (const a of document.querySelectorAll('.topnav a')) {
    if (a.getAttribute('href') === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

// navigate moves to url inside the app.
function navigate(url, { replace: replaceEntry = false } = {}) {
  if (replaceEntry) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  render();
  window.scrollTo(0, 0);
}

function showSignIn(notice) {
  signInShown = true;
  signout.hidden = true;
  document.title = 'Sign in · Weft';
  const input = h('input', {
    id: 'signin-token', type: 'password', class: 'input', testid: 'signin-token',
    autocomplete: 'off', spellcheck: 'false', placeholder: 'API key', required: true,
  });
  const form = h('form', { class: 'signin card', testid: 'signin-form' },
    h('div', { class: 'signin-mark' }, h('img', { src: document.querySelector('link[rel=icon]').href, alt: '', width: 40, height: 40 })),
    h('h1', { text: 'Sign in to Weft' }),
    h('p', { class: 'muted', text: 'Paste an API key. It is sent as a bearer token on every request and kept in this browser’s local storage until you sign out.' }),
    devTokenHint(),
    notice?.kind === 'error' ? h('p', { class: 'signin-error', role: 'alert', testid: 'signin-error', text: notice.text }) : null,
    notice?.kind === 'info' ? h('p', { class: 'signin-info', role: 'status', text: notice.text }) : null,
    h('label', { for: 'signin-token', class: 'label', text: 'API key' }),
    input,
    h('button', { type: 'submit', class: 'btn btn-primary btn-block', testid: 'signin-submit', text: 'Sign in' }));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    setToken(token);
    render();
  });
  replace(app, h('div', { class: 'signin-wrap' }, form));
  input.focus();
}

// devTokenHint says where the dev stack's key is when the page is served
// by `weft dev` (the weft-dev-token-file meta element names its file), and
// is null for any other stack.
function devTokenHint() {
  const file = document.querySelector('meta[name="weft-dev-token-file"]')?.content;
  if (!file) return null;
  return h('p', { class: 'signin-info', testid: 'signin-dev-token' },
    'This is a ', h('code', { text: 'weft dev' }), ' stack: its API key is in ',
    h('code', { testid: 'signin-dev-token-file', text: file }), ' (also printed in the banner as the UI link’s #token=).');
}

// setLive shows the live-update state in the header: 'live', 'paused',
// 'error' or null (hidden).
function setLive(state) {
  live.hidden = !state;
  live.dataset.state = state || '';
  liveText.textContent = { live: 'Live', paused: 'Paused', error: 'Reconnecting…' }[state] || '';
}

let toastTimer = null;

// toast shows the result of an action: {kind: 'success'|'error', text}.
// One toast at a time; a new one replaces the old.
function toast({ kind, text }) {
  const region = document.getElementById('toasts');
  clearTimeout(toastTimer);
  const close = h('button', { type: 'button', class: 'toast-close', 'aria-label': 'Dismiss' }, icon('x'));
  const el = h('div', { class: `toast toast-${kind}`, role: 'status', testid: 'action-result', 'data-kind': kind },
    h('span', { class: 'toast-icon' }, icon(kind === 'success' ? 'check' : 'alert')),
    h('span', { class: 'toast-text', text }),
    close);
  close.addEventListener('click', () => el.remove());
  replace(region, el);
  toastTimer = setTimeout(() => el.remove(), kind === 'success' ? 8000 : 15000);
}

// settleConfirm answers the showing of the confirm dialog whose close
// event has not been handled yet, or is null.
let settleConfirm = null;

// The dialog's close event is dispatched as a queued task, and Blink runs
// input ahead of it, so a new showing can begin before the close event of
// the one before has fired: that late event finds the dialog open again
// and is ignored, the earlier showing having been answered as the next
// one began.
document.getElementById('confirm').addEventListener('close', (ev) => {
  const dialog = ev.currentTarget;
  if (dialog.open || !settleConfirm) return;
  const settle = settleConfirm;
  settleConfirm = null;
  settle(dialog.returnValue === 'yes');
});

// confirmDialog asks a yes/no question in a modal and resolves to true for yes.
function confirmDialog({ title, text, ok, dismiss }) {
  const dialog = document.getElementById('confirm');
  if (settleConfirm) { // closed, its close event not yet handled
    settleConfirm(dialog.returnValue === 'yes');
    settleConfirm = null;
  }
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = ok;
  document.getElementById('confirm-dismiss').textContent = dismiss;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    settleConfirm = resolve;
    dialog.showModal();
    document.getElementById('confirm-dismiss').focus();
  });
}

// Links marked data-nav (and in-app links in general) change the view
// without a page load; modified clicks keep the browser's behaviour.
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target.closest('a[data-nav]');
  if (!a || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return;
  ev.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});

window.addEventListener('popstate', () => render());

window.addEventListener('weft:unauthorized', (ev) => {
  clearToken();
  const text = `${ev.detail.describe()}. Sign in with a valid API key.`;
  const el = app.querySelector('[data-testid=signin-error]');
  if (signInShown && el) {
    el.textContent = text;
    return;
  }
  render({ text, kind: 'error' });
});

signout.addEventListener('click', () => {
  clearToken();
  render({ text: 'Signed out.', kind: 'info' });
});

captureTokenFromURL();
render();
