// DOM helpers. Everything the API returns reaches the page through these,
// as text nodes and attribute values: no HTML string is ever parsed.

const SVG_NS = 'http://www.w3.org/2000/svg';

// h creates an HTML element. attrs keys:
//   class   → className
//   text    → textContent
//   testid  → data-testid
//   onX     → addEventListener('x', fn) when the value is a function
//   hidden, disabled, open → boolean properties
//   anything else → setAttribute(key, String(value)), skipped when null/undefined/false
// children are nodes or strings (added as text); null, undefined and false are skipped.
// pollMs is ms, or the page's poll interval when the weft-poll-ms meta
// element sets one (ui.Options.PollInterval, a test's knob).
export function pollMs(ms) {
  const set = Number(document.querySelector('meta[name="weft-poll-ms"]')?.content);
  return set > 0 ? set : ms;
}

export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s creates an SVG element, with the same attrs rules as h.
export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') el.setAttribute('class', value);
    else if (key === 'text') el.textContent = String(value);
    else if (key === 'testid') el.dataset.testid = value;
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === 'hidden' || key === 'disabled' || key === 'open') el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

// append adds children (nodes, strings, nested arrays) to el.
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// replace removes every child of el and adds children.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// fillCells draws the cells of a table row, cell by cell. cells are
// [sig, build] pairs, one per <td> in order: build makes the cell and sig
// says what it shows. A cell whose sig did not change since the last draw is
// left alone, so a focused link or button in it keeps its focus across
// refreshes.
export function fillCells(tr, cells) {
  cells.forEach(([sig, build], i) => {
    const old = tr.children[i];
    if (old && old.dataset.sig === sig) return;
    const td = build();
    td.dataset.sig = sig;
    if (old) old.replaceWith(td);
    else tr.append(td);
  });
}

// runHref is the address of runId's page in the UI; with stepId, of that
// page with the step's panel open (/runs/{runId}?step={stepId}).
export function runHref(runId, stepId) {
  const page = `/runs/${encodeURIComponent(runId)}`;
  return stepId ? `${page}?${new URLSearchParams({ step: stepId })}` : page;
}

// RUN_STATUSES are the run statuses of the read API, in lifecycle order.
export const RUN_STATUSES = ['PENDING', 'APPROVED', 'QUEUED', 'RUNNING', 'PAUSED', 'COMPLETED', 'FAILED', 'CANCELLED'];

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);

// isTerminal reports whether a run status is final.
export function isTerminal(status) {
  return TERMINAL.has(status);
}

// pill is a status badge. Its text content is exactly the status, so a test
// can read it; unknown statuses get the neutral colour.
export function pill(status, testid) {
  const known = /^[A-Z_]+$/.test(status || '') ? status.toLowerCase() : 'unknown';
  return h('span', { class: `pill pill-${known}`, testid, title: status },
    h('span', { class: 'pill-dot', 'aria-hidden': 'true' }),
    status || 'UNKNOWN');
}

// stalePill is the striped STALE badge shown beside a run's status.
export function stalePill() {
  return h('span', { class: 'pill pill-stale', testid: 'stale-pill', title: 'The projection is halted at a gap in the event log' },
    h('span', { class: 'pill-dot', 'aria-hidden': 'true' }), 'STALE');
}

// icon returns a small inline SVG icon by name.
export function icon(name) {
  const paths = {
    pause: 'M6 4h3v12H6zM11 4h3v12h-3z',
    play: 'M6 4l10 6-10 6z',
    stop: 'M5 5h10v10H5z',
    retry: 'M4 10a6 6 0 1 0 2-4.5M4 3v3.5h3.5',
    copy: 'M7 7h9v9H7zM4 13V4h9',
    send: 'M3 10l14-6-6 14-2-6z',
    alert: 'M10 3l8 14H2zM10 8v4M10 14.5v.5',
    check: 'M4 10.5l4 4 8-9',
    x: 'M5 5l10 10M15 5L5 15',
    chevron: 'M8 5l5 5-5 5',
    child: 'M5 3v8a3 3 0 0 0 3 3h8M13 11l3 3-3 3',
    link: 'M8 12l4-4M7 9l-2 2a2.8 2.8 0 0 0 4 4l2-2M13 11l2-2a2.8 2.8 0 0 0-4-4L9 7',
  };
  return s('svg', { class: `icon icon-${name}`, viewBox: '0 0 20 20', 'aria-hidden': 'true' },
    s('path', { d: paths[name] || '' }));
}
