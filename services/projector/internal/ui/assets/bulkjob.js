// Bulk jobs (docs/api.md, "Bulk operations"): "Act on all matching" on
// the runs list. The list's filters become a bulk filter (bulkFilter);
// POST /gateway/v1/bulk starts the job, and its progress card polls GET
// /gateway/v1/bulk/{bulkId} at the UI's poll interval until the job has
// ended (DONE or CANCELLED), with a "Cancel job" button
// (POST /gateway/v1/bulk/{bulkId}/cancel).

import { ApiError, get, newSignalId, request } from './api.js';
import { h, pollMs, replace } from './dom.js';
import { shortId } from './format.js';

const POLL_MS = pollMs(2000);

// UNSUPPORTED are the runs list's filters a bulk filter cannot express,
// by the list's state field, each with how it is named to people.
const UNSUPPORTED = {
  createdAfter: 'created after', createdBefore: 'created before', endedAfter: 'ended after', endedBefore: 'ended before',
  trigger: 'trigger', schedule: 'schedule', rerunOf: 'reruns of',
};

// bulkFilter translates the runs list's filters (runs.js's state: status
// comma-separated, plan, planVersion, labels as KEY=VALUE, parent and the
// address-only ones) into an api.BulkFilter. It returns {filter, empty,
// unsupported}: empty when it selects every run; unsupported names the
// filters set that a bulk job cannot express (and the STALE status,
// which is no run status), in which case no job may be started, as it
// would act on runs the list does not show.
export function bulkFilter(state) {
  const filter = {};
  const unsupported = Object.keys(UNSUPPORTED).filter((k) => state[k]).map((k) => UNSUPPORTED[k]);
  const statuses = (state.status || '').split(',').filter(Boolean);
  if (statuses.includes('STALE')) unsupported.push('stale');
  if (statuses.length) filter.status = statuses;
  if (state.plan) filter.planId = state.plan;
  if (state.plan && state.planVersion) filter.planVersion = state.planVersion;
  for (const l of state.labels || []) {
    const i = l.indexOf('=');
    if (i < 0) continue;
    filter.labels = { ...filter.labels, [l.slice(0, i)]: l.slice(i + 1) };
  }
  if (state.parent) filter.parent = state.parent;
  return { filter, empty: Object.keys(filter).length === 0, unsupported };
}

// describeFilter names filter (an api.BulkFilter) for people: "status
// FAILED or RUNNING, plan hello@v1, label team=data, child runs of 0f3a…".
export function describeFilter(filter) {
  const parts = [];
  if (filter.status?.length) parts.push(`status ${filter.status.join(' or ')}`);
  if (filter.planId) parts.push(`plan ${filter.planId}${filter.planVersion ? `@${filter.planVersion}` : ''}`);
  for (const [k, v] of Object.entries(filter.labels || {})) parts.push(`label ${k}=${v}`);
  if (filter.parent) parts.push(`child runs of ${shortId(filter.parent)}`);
  return parts.join(', ');
}

// bulkPath is the gateway route of bulk job bulkId (of the jobs with none).
function bulkPath(bulkId, action) {
  if (bulkId === undefined) return '/gateway/v1/bulk';
  return `/gateway/v1/bulk/${encodeURIComponent(bulkId)}${action ? `/${action}` : ''}`;
}

// jobCard returns the progress card of bulk jobs {el, start, unmount}.
// start(action, filter) posts a job and follows it; a refusal throws the
// gateway's ApiError. A start that failed and is made again with the same
// action and filter reuses its bulkId, so a retried click never starts
// two jobs. onEnd is called when a followed job has ended.
export function jobCard({ view, onEnd }) {
  const status = h('span', { testid: 'bulk-job-status' });
  const counts = {};
  for (const name of ['matched', 'done', 'skipped', 'failed']) counts[name] = h('strong', { testid: `bulk-job-${name}`, text: '0' });
  const reasons = h('ul', { class: 'bulk-reasons', testid: 'bulk-job-reasons' });
  const error = h('div', { class: 'inline-error', role: 'alert', hidden: true, testid: 'bulk-job-error' });
  const title = h('h2', { testid: 'bulk-job-title' });
  const cancel = h('button', { type: 'button', class: 'btn btn-sm btn-danger', testid: 'bulk-job-cancel', text: 'Cancel job' });
  const close = h('button', { type: 'button', class: 'btn btn-sm', testid: 'bulk-job-close', text: 'Close', hidden: true });
  const bar = h('span', { class: 'progress bulk-progress', role: 'img' },
    h('span', { class: 'progress-done' }), h('span', { class: 'progress-failed' }));
  const el = h('section', { class: 'card bulk-job', testid: 'bulk-job', role: 'status', hidden: true },
    h('div', { class: 'card-head' }, title, h('div', { class: 'card-head-end' }, status, cancel, close)),
    h('div', { class: 'bulk-counts' },
      h('span', {}, counts.matched, ' matched'), bar, h('span', {}, counts.done, ' done'),
      h('span', {}, counts.skipped, ' skipped'), h('span', {}, counts.failed, ' failed')),
    reasons, error);

  let job = null; // the job followed
  let timer = null;
  let stopped = false;
  let pending = null; // {key, bulkId} of a start not known to have been recorded

  function draw(j) {
    job = j;
    el.hidden = false;
    el.dataset.bulkId = j.bulkId;
    el.dataset.status = j.status;
    title.textContent = `Bulk ${j.action} · ${describeFilter(j.filter || {}) || 'every run'}`;
    status.textContent = j.status;
    for (const [name, node] of Object.entries(counts)) node.textContent = String(Number(j[name]) || 0);
    const matched = Number(j.matched) || 0;
    const [ok, bad] = bar.children;
    ok.style.width = matched ? `${(100 * ((Number(j.done) || 0) + (Number(j.skipped) || 0))) / matched}%` : '0';
    bad.style.width = matched ? `${(100 * (Number(j.failed) || 0)) / matched}%` : '0';
    bar.setAttribute('aria-label', `${(Number(j.done) || 0) + (Number(j.skipped) || 0) + (Number(j.failed) || 0)} of ${matched} runs handled`);
    replace(reasons, Object.entries(j.skippedReasons || {}).sort().map(([why, n]) =>
      h('li', { testid: 'bulk-job-reason', 'data-reason': why }, h('strong', { text: String(n) }), ` skipped: ${why}`)));
    const running = j.status === 'RUNNING';
    cancel.hidden = !running;
    close.hidden = running;
  }

  function showError(err) {
    error.hidden = !err;
    error.textContent = err ? describe(err) : '';
  }

  // poll reads the job again after the poll interval, until it has ended.
  function schedule() {
    clearTimeout(timer);
    if (stopped || !job) return;
    if (job.status !== 'RUNNING') {
      onEnd?.(job);
      return;
    }
    timer = setTimeout(poll, POLL_MS);
  }

  async function poll() {
    const id = job.bulkId;
    try {
      const res = await get(bulkPath(id));
      if (stopped || job?.bulkId !== id) return;
      showError(null);
      draw(res.data || job);
    } catch (err) {
      if (stopped || job?.bulkId !== id) return;
      showError(err);
    }
    schedule();
  }

  cancel.addEventListener('click', async () => {
    if (!job) return;
    cancel.disabled = true;
    try {
      const res = await request('POST', bulkPath(job.bulkId, 'cancel'), { body: {} });
      showError(null);
      draw(res.data || job);
      schedule();
    } catch (err) {
      showError(err);
    } finally {
      cancel.disabled = false;
    }
  });
  close.addEventListener('click', () => {
    clearTimeout(timer);
    job = null;
    el.hidden = true;
  });

  return {
    el,
    async start(action, filter) {
      const key = `${action}|${JSON.stringify(filter)}`;
      if (pending?.key !== key) pending = { key, bulkId: newSignalId() };
      const res = await request('POST', bulkPath(), { body: { bulkId: pending.bulkId, action, filter } });
      pending = null;
      showError(null);
      draw(res.data || {});
      view.toast({ kind: 'success', text: `Bulk ${action} started on ${res.data?.matched ?? 0} matching runs` });
      schedule();
    },
    unmount() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

// describe is err for people: the gateway's "code: message".
export function describe(err) {
  return err instanceof ApiError ? err.describe() : String(err);
}
