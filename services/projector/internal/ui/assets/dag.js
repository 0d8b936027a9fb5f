// The steps graph: the plan's steps in columns by dependency depth, joined
// by SVG edges, each node showing the step's snapshot. Narrow screens get
// the same nodes as an ordered list, each naming the steps it waits for.

import { childRunLink, isSubPlan, subPlanWhat } from './childruns.js';
import { h, icon, pill, replace, s } from './dom.js';
import { attemptNumber, between, bytes, duration } from './format.js';
import { canRetryStep, canSendStepSignal } from './signals.js';
import { progressText, topSteps } from './stepdetail.js';
import { rerunButton, reusedChip } from './rerun.js';

// layout orders the steps of a plan (and any snapshot steps the plan does
// not name, but for the children of forEach steps) into columns: a step's column is one more than the deepest of
// the steps it depends on. Within a column, steps follow the mean position
// of their dependencies, which keeps edges from crossing in common graphs.
export function layout(planSteps, snapSteps) {
  const nodes = new Map();
  for (const p of planSteps) {
    if (p && typeof p.id === 'string' && !nodes.has(p.id)) nodes.set(p.id, { id: p.id, plan: p, deps: [], depth: 0 });
  }
  for (const st of topSteps(snapSteps.filter(Boolean))) {
    if (!nodes.has(st.stepId)) nodes.set(st.stepId, { id: st.stepId, plan: null, deps: [], depth: 0 });
  }
  for (const n of nodes.values()) {
    n.deps = (n.plan?.dependsOn || []).filter((d) => nodes.has(d) && d !== n.id);
  }
  const depthOf = (n, seen) => {
    if (n.fixed) return n.depth;
    if (seen.has(n.id)) return 0; // A cycle: plans are validated, so only bad data gets here.
    seen.add(n.id);
    n.depth = n.deps.reduce((d, id) => Math.max(d, depthOf(nodes.get(id), seen) + 1), 0);
    seen.delete(n.id);
    n.fixed = true;
    return n.depth;
  };
  for (const n of nodes.values()) depthOf(n, new Set());

  const columns = [];
  const order = [...nodes.values()];
  order.forEach((n, i) => { n.order = i; });
  for (const n of order) (columns[n.depth] ||= []).push(n);
  const position = new Map();
  columns.forEach((col, depth) => {
    if (depth > 0) {
      const weight = (n) => (n.deps.length ? n.deps.reduce((sum, d) => sum + position.get(d), 0) / n.deps.length : n.order);
      col.sort((a, b) => weight(a) - weight(b) || a.order - b.order);
    }
    col.forEach((n, i) => position.set(n.id, i));
  });
  const edges = [];
  for (const n of nodes.values()) for (const d of n.deps) edges.push([d, n.id]);
  return { nodes, columns: columns.filter(Boolean), edges };
}

// Zoom bounds of the graph, and the step of the - and + buttons.
const ZOOM_MIN = 0.1;
const ZOOM_MAX = 1.5;
const ZOOM_STEP = 1.25;
// A graph a little too wide for its box (six steps in a row on a laptop)
// starts zoomed out to its width, down to this scale; a wider one starts
// at 100%, to be scrolled or fitted.
const AUTO_FIT_MIN = 0.6;

// createDag returns {el, controls, update(snapshot, actions), destroy()}.
// actions is {retry(stepId, button), signal(name, stepId, button),
// details(stepId), selected(), rerun(stepId)?, mayRerun()?}: details
// opens a step's panel, selected names the step it shows; rerun opens the
// rerun from a step, offered on every step while mayRerun() holds. With plain, the graph draws a plan that has no
// run (a registered plan's page): update takes {plan} and no actions, and
// the nodes show neither status nor buttons.
//
// However wide and deep the plan, the graph fits: el is a box no taller
// than the viewport that scrolls both ways (drag its background to pan),
// and controls zoom the graph out to fit the box ("Fit"), in and out, and
// back to 100%. The graph is drawn at its natural size in a canvas scaled
// by a transform; a sizer around it takes the scaled size, so the box
// scrolls over exactly what is shown.
export function createDag({ plain = false } = {}) {
  const cols = h('div', { class: 'dag-cols' });
  const svg = s('svg', { class: 'dag-edges', 'aria-hidden': 'true' });
  const canvas = h('div', { class: 'dag-canvas' }, svg, cols);
  const sizer = h('div', { class: 'dag-sizer' }, canvas);
  const el = h('div', { class: 'dag', testid: 'dag', tabindex: '0', role: 'region', 'aria-label': 'Steps graph: scroll or drag to pan' }, sizer);
  const level = h('output', { class: 'dag-zoom-level', testid: 'dag-zoom', 'aria-live': 'polite', text: '100%' });
  const button = (testid, label, text, onClick) => {
    const b = h('button', { type: 'button', class: 'btn btn-sm', testid, 'aria-label': label, title: label, text });
    b.addEventListener('click', onClick);
    return b;
  };
  const controls = h('div', { class: 'dag-controls', role: 'group', 'aria-label': 'Zoom' },
    button('dag-zoom-out', 'Zoom out', '−', () => zoomTo(scale / ZOOM_STEP)),
    level,
    button('dag-zoom-in', 'Zoom in', '+', () => zoomTo(scale * ZOOM_STEP)),
    button('dag-fit', 'Zoom to fit the whole graph', 'Fit', () => fit()),
    button('dag-zoom-reset', 'Actual size', '100%', () => zoomTo(1)));
  let edges = [];
  let statusOf = new Map();
  let scale = 1;
  let fitted = false; // follow the box's size: set by Fit, cleared by any other zoom
  let drawn = false; // the graph has been drawn once (autoFit)

  // zoomTo sets the scale, keeping the point at the box's centre in place.
  function zoomTo(k, keepFit = false) {
    fitted = keepFit;
    const next = Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, k));
    const cx = (el.scrollLeft + el.clientWidth / 2) / scale;
    const cy = (el.scrollTop + el.clientHeight / 2) / scale;
    scale = next;
    applyScale();
    el.scrollLeft = cx * scale - el.clientWidth / 2;
    el.scrollTop = cy * scale - el.clientHeight / 2;
  }

  function applyScale() {
    canvas.style.transform = scale === 1 ? '' : `scale(${scale})`;
    sizer.style.width = scale === 1 ? '' : `${canvas.offsetWidth * scale}px`;
    sizer.style.height = scale === 1 ? '' : `${canvas.offsetHeight * scale}px`;
    sizer.style.overflow = scale === 1 ? '' : 'hidden'; // the canvas's unscaled box is not scrolled over
    level.textContent = `${Math.round(scale * 100)}%`;
    el.dataset.scale = String(scale);
  }

  // fitScales returns the scales at which the graph's width and its height
  // fit the box, rounded down to whole per mille so that rounding never
  // adds a scrollbar; null before the graph has a size.
  function fitScales() {
    const cs = getComputedStyle(el);
    const padX = parseFloat(cs.paddingLeft) + parseFloat(cs.paddingRight);
    const padY = parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom);
    const w = canvas.offsetWidth;
    const hgt = canvas.offsetHeight;
    if (!w || !hgt) return null;
    const down = (k) => Math.floor(1000 * k) / 1000;
    return { width: down((el.clientWidth - padX) / w), height: down((el.clientHeight - padY) / hgt) };
  }

  // fit zooms so that the whole graph shows in the box (never above 100%).
  function fit() {
    const k = fitScales();
    if (!k) return;
    zoomTo(Math.min(1, k.width, k.height), true);
    el.scrollLeft = 0;
    el.scrollTop = 0;
  }

  // autoFit, at the graph's first drawing, zooms a graph a little too wide
  // for the box out to its width (AUTO_FIT_MIN).
  function autoFit() {
    if (drawn || !canvas.offsetWidth) return;
    drawn = true;
    const k = fitScales();
    if (k && k.width < 1 && k.width >= AUTO_FIT_MIN && getComputedStyle(cols).flexDirection !== 'column') zoomTo(k.width);
  }

  // Dragging the background pans; a drag that starts on a control does not.
  let drag = null;
  el.addEventListener('pointerdown', (ev) => {
    if (ev.button !== 0 || ev.target.closest('button, a, input, summary, code, .node-error')) return;
    drag = { x: ev.clientX, y: ev.clientY, left: el.scrollLeft, top: el.scrollTop, id: ev.pointerId };
    el.setPointerCapture(ev.pointerId);
    el.classList.add('is-panning');
  });
  el.addEventListener('pointermove', (ev) => {
    if (!drag || ev.pointerId !== drag.id) return;
    el.scrollLeft = drag.left - (ev.clientX - drag.x);
    el.scrollTop = drag.top - (ev.clientY - drag.y);
  });
  const endDrag = () => {
    drag = null;
    el.classList.remove('is-panning');
  };
  el.addEventListener('pointerup', endDrag);
  el.addEventListener('pointercancel', endDrag);

  // drawEdges draws the edges in the canvas's own (unscaled) coordinates.
  function drawEdges() {
    const box = canvas.getBoundingClientRect();
    svg.setAttribute('width', String(canvas.offsetWidth));
    svg.setAttribute('height', String(canvas.offsetHeight));
    const paths = [s('defs', {},
      ['done', 'failed', 'pending', 'active'].map((kind) => s('marker', {
        id: `arrow-${kind}`, viewBox: '0 0 10 10', refX: '9', refY: '5',
        markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse', class: `arrow arrow-${kind}`,
      }, s('path', { d: 'M0 1L9 5L0 9z' }))))];
    const vertical = getComputedStyle(cols).flexDirection === 'column';
    if (!vertical) {
      const x = (px) => (px - box.left) / scale;
      const y = (px) => (px - box.top) / scale;
      for (const [from, to] of edges) {
        const a = el.querySelector(`[data-node="${CSS.escape(from)}"]`);
        const b = el.querySelector(`[data-node="${CSS.escape(to)}"]`);
        if (!a || !b) continue;
        const ra = a.getBoundingClientRect();
        const rb = b.getBoundingClientRect();
        const x1 = x(ra.right);
        const y1 = y(ra.top) + Math.min(a.offsetHeight / 2, 28);
        const x2 = x(rb.left) - 2;
        const y2 = y(rb.top) + Math.min(b.offsetHeight / 2, 28);
        const dx = Math.max((x2 - x1) / 2, 24);
        const kind = edgeKind(statusOf.get(from));
        paths.push(s('path', {
          class: `edge edge-${kind}`,
          d: `M${x1} ${y1} C${x1 + dx} ${y1} ${x2 - dx} ${y2} ${x2} ${y2}`,
          'marker-end': `url(#arrow-${kind})`,
        }));
      }
    }
    replace(svg, paths);
  }

  // A change of the box's size (the window) or of the graph's (a node's
  // content) re-fits a fitted graph and redraws the edges.
  const resize = new ResizeObserver(() => {
    if (fitted) fit();
    else applyScale();
    drawEdges();
  });
  resize.observe(el);
  resize.observe(canvas);

  function update(snap, actions) {
    const planSteps = Array.isArray(snap.plan?.steps) ? snap.plan.steps : [];
    const snapSteps = Array.isArray(snap.steps) ? snap.steps : [];
    const byId = new Map(snapSteps.map((st) => [st.stepId, st]));
    const g = layout(planSteps, snapSteps);
    edges = g.edges;
    statusOf = new Map([...g.nodes.keys()].map((id) => [id, byId.get(id)?.status || 'PENDING']));
    if (g.nodes.size === 0) {
      replace(cols, h('div', { class: 'empty', text: plain ? 'This plan has no steps.' : 'This run has no steps to show yet.' }));
    } else {
      let index = 0;
      replace(cols, g.columns.map((col) => h('div', { class: 'dag-col' },
        col.map((n) => node(n, byId.get(n.id), ++index, snap, plain ? null : actions)))));
    }
    requestAnimationFrame(() => {
      if (g.nodes.size > 0) autoFit();
      drawEdges();
    });
  }

  return { el, controls, update, destroy: () => resize.disconnect() };
}

function edgeKind(status) {
  switch (status) {
    case 'SUCCESS': return 'done';
    case 'FAILED': return 'failed';
    case 'RUNNING': return 'active';
    default: return 'pending';
  }
}

// node renders one step: n from layout, st its StepSnapshot (or undefined
// when it has not started). Without actions (a plain graph) it shows the
// step as the plan declares it: no status, chips or buttons.
function node(n, st, index, snap, actions) {
  const p = n.plan || {};
  const status = st?.status || 'PENDING';
  const waits = p.kind === 'waitSignal';
  const logical = attemptNumber(st?.logicalAttemptId);
  const engine = attemptNumber(st?.engineAttemptId);
  const ms = st?.startedAt ? between(st.startedAt, st.completedAt) : null;

  const what = nodeWhat(n);
  const child = isSubPlan(p) ? ' node-subplan' : '';
  const kind = p.kind || null;
  if (!actions) {
    return h('article', { class: `node node-plain${child}`, testid: 'step', 'data-step-id': n.id, 'data-node': n.id, 'data-kind': kind },
      nodeHead(n, index), what, nodeDeps(n));
  }

  const chips = [];
  if (!st) chips.push(h('span', { class: 'chip chip-quiet', text: 'not started' }));
  // A step that never started (skipped before it ran, though a
  // RETRY_STEP of an ancestor moved it to its next logical attempt) shows
  // no retry.
  if (logical > 1 && st.attempts > 0 && status !== 'SKIPPED') chips.push(h('span', { class: 'chip chip-retry', testid: 'step-attempt', title: `logical attempt ${logical}`, text: `Retry #${logical - 1}` }));
  if (engine > 1) chips.push(h('span', { class: 'chip chip-delivery', testid: 'step-delivery', title: 'platform redelivery of the same attempt', text: `delivery ${engine}` }));
  if (ms !== null) {
    chips.push(h('span', {
      class: `chip chip-time${st.completedAt ? '' : ' is-live'}`, testid: 'step-duration',
      'data-started': st.completedAt ? null : st.startedAt, text: duration(ms),
    }));
  }

  // A step a rerun did not run: the run whose outcome it copied.
  if (st?.reusedFrom) chips.push(reusedChip(st.reusedFrom));
  // The child run the current attempt started; none to open before then.
  if (child && st?.childRunId && !st.forEach) chips.push(childRunLink(st.childRunId, 'step-child-run'));
  if (st?.forEach) {
    chips.push(h('span', { class: 'chip chip-foreach', testid: 'step-foreach', title: `forEach over ${st.forEach.count} elements`, text: progressText(st.forEach) }));
  }

  const err = st?.error;
  let errorBox = null;
  if (status === 'SKIPPED' && err) {
    errorBox = h('div', { class: 'node-error is-quiet', testid: 'step-error' },
      h('div', { class: 'node-error-label', text: 'Skipped' }),
      h('span', { class: 'node-error-code', testid: 'step-skip-reason', text: err.message || 'SKIPPED' }));
  } else if (err && (err.code || err.message)) {
    const skipped = status === 'SKIPPED' || status === 'CANCELLED' || err.code === 'SKIPPED';
    const previous = status === 'PENDING' || status === 'RUNNING';
    errorBox = h('div', { class: `node-error${skipped ? ' is-quiet' : ''}${previous ? ' is-previous' : ''}`, testid: 'step-error' },
      previous ? h('div', { class: 'node-error-label', text: 'Last attempt failed' }) : null,
      h('span', { class: 'node-error-code', text: err.code || 'ERROR' }),
      h('span', { class: 'node-error-msg', text: err.message || '' }));
  }

  const artifacts = Array.isArray(st?.artifacts) && st.artifacts.length
    ? h('ul', { class: 'artifacts' }, st.artifacts.map(artifact))
    : null;

  const buttons = [];
  const open = h('button', { type: 'button', class: 'btn btn-sm', testid: 'btn-step-details', 'data-step-id': n.id, 'aria-expanded': String(actions.selected() === n.id) },
    icon('chevron'), st?.forEach ? 'Open elements' : 'Details');
  open.addEventListener('click', () => actions.details(n.id));
  buttons.push(open);
  if (canRetryStep(snap.status, status)) {
    const b = h('button', { type: 'button', class: 'btn btn-sm', testid: 'btn-retry-step', 'data-step-id': n.id }, icon('retry'), 'Retry step');
    b.addEventListener('click', () => actions.retry(n.id, b));
    buttons.push(b);
  }
  if (waits && p.signal && canSendStepSignal(snap.status, status)) {
    const b = h('button', { type: 'button', class: 'btn btn-sm btn-primary', testid: 'btn-signal', 'data-step-id': n.id, 'data-signal': p.signal },
      icon('send'), `Send ${p.signal}`);
    b.addEventListener('click', () => actions.signal(p.signal, n.id, b));
    buttons.push(b);
  }

  const rerun = rerunButton(n.id, actions);
  if (rerun) buttons.push(rerun);

  return h('article', { class: `node node-${status.toLowerCase()}${child}${actions.selected() === n.id ? ' is-selected' : ''}`, testid: 'step', 'data-step-id': n.id, 'data-node': n.id, 'data-kind': kind },
    nodeHead(n, index, pill(status, 'step-status')),
    what,
    nodeDeps(n),
    chips.length ? h('div', { class: 'chips' }, chips) : null,
    errorBox,
    artifacts,
    buttons.length ? h('div', { class: 'node-actions' }, buttons) : null);
}

// nodeHead is a node's header: its index, its id and, when given, its
// status pill.
function nodeHead(n, index, statusPill = null) {
  return h('header', { class: 'node-head' },
    h('span', { class: 'node-index', text: String(index) }),
    h('span', { class: 'node-id', title: n.id, text: n.id }),
    statusPill);
}

// nodeWhat says what a step does: the signal it waits for, the child run
// it starts, or its activity.
function nodeWhat(n) {
  const p = n.plan || {};
  if (isSubPlan(p)) return subPlanWhat(p);
  if (p.kind === 'waitSignal') {
    return h('div', { class: 'node-what' }, icon('send'), 'waits for signal ', h('code', { text: p.signal || '?' }));
  }
  return h('div', { class: 'node-what' }, h('span', { class: 'muted', text: 'activity ' }), h('code', { text: p.activity || (n.plan ? '—' : 'not in plan') }));
}

// nodeDeps names the steps a node waits for, or is null.
function nodeDeps(n) {
  return n.deps.length ? h('div', { class: 'node-deps' }, 'after ', n.deps.map((d, i) => [i ? ', ' : '', h('code', { text: d })])) : null;
}

// artifact renders an ArtifactRef: its uri as the link text when the scheme
// is http(s), as plain text otherwise (s3://… is no address a browser opens,
// and a javascript: URI must never become a link).
function artifact(a) {
  const uri = String(a.uri || '');
  let link;
  if (/^https?:\/\//i.test(uri)) {
    link = h('a', { href: uri, target: '_blank', rel: 'noopener noreferrer', class: 'artifact-uri', testid: 'step-artifact', title: uri }, icon('link'), uri);
  } else {
    link = h('span', { class: 'artifact-uri', testid: 'step-artifact', title: uri }, icon('link'), uri);
  }
  return h('li', { class: 'artifact' },
    link,
    h('span', { class: 'artifact-meta' },
      a.kind ? h('span', { class: 'chip chip-kind', text: a.kind }) : null,
      a.sizeBytes ? h('span', { class: 'muted', text: bytes(a.sizeBytes) }) : null,
      a.sha256 ? h('span', { class: 'muted mono', title: `sha256 ${a.sha256}`, text: String(a.sha256).slice(0, 8) }) : null));
}
