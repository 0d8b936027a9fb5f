// The event timeline of a run: GET /v1/runs/{runId}/events, fetched
// incrementally with afterSeq, one row per event, eventData on demand.

import { get, runPath } from './api.js';
import { h, icon, replace } from './dom.js';
import { attemptNumber, clock, dateTime } from './format.js';

const PAGE = 500;

// createTimeline returns {el, count, sync(), lastSeq(), onEvents(fn)}.
// sync fetches the events after the last one shown, page by page, until
// the API says there are no more; calls made while one runs are folded
// into one more pass. fn gets each page's new events, in runSeq order,
// once each.
export function createTimeline(runId, signal) {
  const tbody = h('tbody');
  const table = h('table', { class: 'table events-table', testid: 'events-table' },
    h('thead', {}, h('tr', {},
      h('th', { class: 'num', text: 'Seq' }), h('th', { text: 'Time' }), h('th', { text: 'Event' }),
      h('th', { text: 'Step' }), h('th', { text: 'Attempt' }), h('th', { class: 'cell-toggle', text: '' }))),
    tbody);
  const empty = h('div', { class: 'empty', text: 'No events yet.' });
  const error = h('div', { class: 'inline-error', role: 'alert', hidden: true });
  const count = h('span', { class: 'count', testid: 'events-count', text: '0' });
  const el = h('div', {}, error, h('div', { class: 'table-scroll' }, table), empty);

  let afterSeq = 0;
  let running = null;
  let again = false;
  let onEvents = () => {};

  async function pass() {
    for (;;) {
      const res = await get(`${runPath(runId)}/events?afterSeq=${afterSeq}&limit=${PAGE}`, { signal });
      const events = Array.isArray(res.data?.events) ? res.data.events : [];
      const fresh = [];
      for (const ev of events) {
        if (typeof ev.runSeq === 'number' && ev.runSeq <= afterSeq) continue;
        tbody.append(...rows(ev));
        fresh.push(ev);
        if (typeof ev.runSeq === 'number') afterSeq = ev.runSeq;
      }
      if (fresh.length) onEvents(fresh);
      if (typeof res.data?.nextAfterSeq === 'number' && res.data.nextAfterSeq > afterSeq) afterSeq = res.data.nextAfterSeq;
      if (!res.data?.more || events.length === 0) return;
    }
  }

  async function sync() {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await pass();
          error.hidden = true;
        } catch (err) {
          if (signal.aborted) return;
          error.hidden = false;
          replace(error, icon('alert'), `Could not load events — ${err.describe ? err.describe() : err.message}`);
        }
      } while (again && !signal.aborted);
    })();
    try {
      await running;
    } finally {
      running = null;
      const n = tbody.querySelectorAll('tr.event-row').length;
      count.textContent = String(n);
      empty.hidden = n > 0;
      table.hidden = n === 0;
    }
    return undefined;
  }

  table.hidden = true;
  return { el, count, sync, lastSeq: () => afterSeq, onEvents: (fn) => { onEvents = fn; } };
}

// rows returns the row of one event and its hidden detail row.
function rows(ev) {
  const logical = attemptNumber(ev.logicalAttemptId);
  const engine = attemptNumber(ev.engineAttemptId);
  const attempt = [];
  if (logical) attempt.push(h('span', { text: `#${logical}` }));
  if (engine > 1) attempt.push(h('span', { class: 'muted', text: ` · delivery ${engine}` }));

  const detail = h('tr', { class: 'event-detail', hidden: true },
    h('td', { colspan: 6 }, detailBody(ev)));
  const toggle = h('button', { type: 'button', class: 'btn btn-ghost btn-xs', testid: 'event-toggle', 'aria-expanded': 'false', title: 'Show the event' }, '{ }');
  toggle.addEventListener('click', () => {
    detail.hidden = !detail.hidden;
    toggle.setAttribute('aria-expanded', String(!detail.hidden));
    row.classList.toggle('is-open', !detail.hidden);
  });
  const row = h('tr', { class: 'event-row', testid: 'event-row', 'data-seq': ev.runSeq },
    h('td', { class: 'num mono', text: ev.runSeq ?? '' }),
    h('td', { class: 'mono nowrap', title: dateTime(ev.persistedAt), text: clock(ev.persistedAt || ev.emittedAt) }),
    h('td', {}, h('span', { class: `etype etype-${typeTone(ev.eventType)}`, text: ev.eventType || '?' })),
    h('td', { class: 'mono' }, ev.stepId || h('span', { class: 'muted', text: '—' })),
    h('td', { class: 'nowrap' }, attempt.length ? attempt : h('span', { class: 'muted', text: '—' })),
    h('td', { class: 'cell-toggle' }, toggle));
  return [row, detail];
}

// detailBody shows the envelope's identifying fields and eventData as JSON.
function detailBody(ev) {
  const fields = [
    ['eventId', ev.eventId], ['emittedAt', ev.emittedAt], ['persistedAt', ev.persistedAt],
    ['idempotencyKey', ev.idempotencyKey], ['causedBySignalId', ev.causedBySignalId],
    ['parentEventId', ev.parentEventId], ['logicalAttemptId', ev.logicalAttemptId],
    ['engineAttemptId', ev.engineAttemptId], ['adapterVersion', ev.adapterVersion],
  ].filter(([, v]) => v !== undefined && v !== null && v !== '');
  let json = '';
  if (ev.eventData !== undefined && ev.eventData !== null) {
    try {
      json = JSON.stringify(ev.eventData, null, 2);
    } catch {
      json = String(ev.eventData);
    }
  }
  return h('div', { class: 'event-detail-body' },
    h('dl', { class: 'kv' }, fields.map(([k, v]) => [h('dt', { text: k }), h('dd', { class: 'mono', text: String(v) })])),
    json ? h('pre', { class: 'json', testid: 'event-data', text: json }) : h('p', { class: 'muted small', text: 'No eventData.' }));
}

// typeTone picks the colour of an event type's tag.
function typeTone(type) {
  const t = String(type || '');
  if (/Failed|Rejected/.test(t)) return 'bad';
  if (/Completed/.test(t)) return 'good';
  if (/Paused|Retry|Queued/.test(t)) return 'warn';
  if (/Signal/.test(t)) return 'signal';
  if (/Cancelled|Skipped/.test(t)) return 'quiet';
  if (/Started|Scheduled|Resumed|Approved/.test(t)) return 'info';
  return 'neutral';
}
