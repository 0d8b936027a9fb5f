// A paged list: the machinery the runs, schedules and triggers lists
// share (resourceList adds the page of a gateway resource's list). It reads
// a list endpoint with cursor pagination, refreshes the first page every
// few seconds while the tab is visible, appends the next page on "Load
// more", keeps the rows loaded beyond the first page across refreshes,
// reports failures in an error box and the header's live state, and keeps
// one row per item in a <tbody>, in the list's order. The page draws the
// rows through callbacks.

import { get } from './api.js';
import { h, icon, replace } from './dom.js';

const PAGE = 50;
const MAX_PAGE = 200;

// pagedList returns a list {start, reset, refresh, stop} that does nothing until
// start(). opts:
//   view        the app's view; its setLive shows 'live', 'paused' or 'error'
//   path        (query) → the address of a page; query is {limit} or {limit, cursor}
//   field       the name of the items' array in the answer's data ('runs')
//   key         (item) → its id, unique in the list
//   noun        what could not be loaded, in the error box ('runs')
//   pollMs      the pause between two refreshes
//   tbody, errorBox, loadMore   the page's elements the list fills, shows and hides
//   createRow   (item) → a row: an object whose nodes are its <tr>s, made on
//               its id's first draw and kept while the id stays in the list
//   fillRow     (row, item, now) draws item into its row, on every draw
//   dropRow     optional (row, id), once id has left the list and its nodes the page
//   emptyRow    () → the <tr> shown when an answer has come and holds no item
//   onDraw      optional ({items, nextCursor, loaded}) after every draw
//   alongside   optional (signal) → a promise awaited with every refresh, such
//               as a hint drawn beside the list; it should not reject
export function pagedList(opts) {
  const { view, path, field, key, noun, pollMs, tbody, errorBox, loadMore } = opts;
  const state = { items: [], nextCursor: null, loaded: false, generation: 0 };
  const rows = new Map(); // key → row
  const ac = new AbortController();
  let timer = null;

  // refresh fetches the first page again, as many rows as are shown (up to
  // 200). A complete answer (no nextCursor) replaces the list; otherwise the
  // rows loaded beyond it with "Load more" stay behind it. An answer to a
  // request sent before reset() is dropped.
  async function refresh() {
    const generation = state.generation;
    const limit = Math.min(Math.max(state.items.length, PAGE), MAX_PAGE);
    try {
      const [res] = await Promise.all([
        get(path({ limit }), { signal: ac.signal }),
        opts.alongside?.(ac.signal),
      ]);
      if (generation !== state.generation) return;
      const fresh = res.data?.[field] || [];
      const cursor = res.data?.nextCursor || null;
      const merged = cursor ? mergeHead(state.items, fresh, key) : fresh;
      if (merged.length > fresh.length) {
        state.items = merged; // Rows loaded beyond the first page stay, with their cursor.
      } else {
        state.items = fresh;
        state.nextCursor = cursor;
      }
      state.loaded = true;
      showError(null);
      view.setLive('live');
      draw();
    } catch (err) {
      // Stopped (a 401 stops it too: the sign-in form replaces the page), or reset.
      if (ac.signal.aborted || generation !== state.generation) return;
      view.setLive('error');
      showError(err);
    }
  }

  // more appends the page after nextCursor, without the items already shown.
  async function more() {
    if (!state.nextCursor) return;
    const generation = state.generation;
    loadMore.disabled = true;
    try {
      const res = await get(path({ limit: PAGE, cursor: state.nextCursor }), { signal: ac.signal });
      if (generation !== state.generation) return;
      const known = new Set(state.items.map((item) => key(item)));
      state.items = state.items.concat((res.data?.[field] || []).filter((item) => !known.has(key(item))));
      state.nextCursor = res.data?.nextCursor || null;
      showError(null);
      draw();
    } catch (err) {
      if (!ac.signal.aborted) showError(err);
    } finally {
      loadMore.disabled = false;
    }
  }

  function showError(err) {
    errorBox.hidden = !err;
    if (err) replace(errorBox, icon('alert'), `Could not load ${noun} — ${err.describe ? err.describe() : err.message}. Retrying…`);
  }

  // draw puts the rows of the items into tbody, in order. A row that is
  // already in place is not moved, so it keeps its focus and selection.
  function draw() {
    const now = Date.now();
    const ids = new Set();
    const wanted = [];
    for (const item of state.items) {
      const id = key(item);
      let row = rows.get(id);
      if (!row) {
        row = opts.createRow(item);
        rows.set(id, row);
      }
      opts.fillRow(row, item, now);
      ids.add(id);
      wanted.push(...row.nodes);
    }
    for (const [id, row] of rows) {
      if (!ids.has(id)) {
        for (const tr of row.nodes) tr.remove();
        rows.delete(id);
        opts.dropRow?.(row, id);
      }
    }
    tbody.querySelector('.empty-row')?.remove();
    wanted.forEach((tr, i) => {
      if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
    });
    if (wanted.length === 0 && state.loaded) tbody.append(opts.emptyRow());
    loadMore.hidden = !state.nextCursor;
    opts.onDraw?.({ items: state.items, nextCursor: state.nextCursor, loaded: state.loaded });
  }

  // The poll loop: refresh, wait pollMs, again; paused while the tab is hidden.
  async function tick() {
    timer = null;
    if (document.hidden) {
      view.setLive('paused');
      return; // onVisibility restarts it.
    }
    await refresh();
    if (!ac.signal.aborted && !timer && !document.hidden) timer = setTimeout(tick, pollMs);
  }
  function restart() {
    clearTimeout(timer);
    timer = null;
    tick();
  }
  function onVisibility() {
    if (!document.hidden) restart();
    else view.setLive('paused');
  }

  loadMore.addEventListener('click', more);

  return {
    // start draws the empty list and starts the poll loop.
    start() {
      document.addEventListener('visibilitychange', onVisibility);
      draw();
      tick();
    },
    // reset drops every item and loads the first page again, as when the
    // page's filters change; answers to earlier requests are dropped.
    reset() {
      state.generation++;
      state.items = [];
      state.nextCursor = null;
      state.loaded = false;
      draw();
      restart();
    },
    // refresh loads the first page again now, keeping the rows shown, as
    // after an action changed an item.
    refresh() {
      restart();
    },
    // stop aborts every request and ends the poll loop; it may be called
    // more than once.
    stop() {
      ac.abort();
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    },
  };
}

// resourceList draws into root the list page of one of the gateway's
// resources, whose list answer holds them in the field name ('schedules'),
// or in opts.field when it is another ('versions' for the plans), and
// counts them as one / name ("1 schedule", "3 schedules"; opts.many when
// the plural is not name), and returns
// its pagedList, not yet started. opts are listPage's title, intro and
// table, the table's tbody, and pagedList's view, path, key, pollMs,
// createRow, fillRow, dropRow and emptyRow; its optional onDraw runs after
// the count is drawn.
export function resourceList(root, opts) {
  const { name, one, title, intro, table } = opts;
  const { summary, errorBox, loadMore } = listPage(root, { name, title, intro, table });
  return pagedList({
    ...opts, errorBox, loadMore, field: opts.field || name, noun: name,
    onDraw(drawn) {
      summary.textContent = countText(drawn, one, opts.many || name);
      opts.onDraw?.(drawn);
    },
  });
}

// listPage draws a list page into root: a head with title, intro and a
// count, the error box, table in a card, and "Load more". name prefixes the
// testids: {name}-summary, {name}-error. It returns {summary, errorBox,
// loadMore} for pagedList and onDraw.
function listPage(root, { name, title, intro, table }) {
  const summary = h('span', { class: 'muted small', testid: `${name}-summary` });
  const errorBox = h('div', { class: 'inline-error', role: 'alert', hidden: true, testid: `${name}-error` });
  const loadMore = h('button', { type: 'button', class: 'btn', testid: 'load-more', text: 'Load more', hidden: true });
  replace(root,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: title }), h('p', { class: 'muted', text: intro })),
      summary),
    errorBox,
    h('div', { class: 'card table-card' }, h('div', { class: 'table-scroll' }, table)),
    h('div', { class: 'list-foot' }, loadMore));
  return { summary, errorBox, loadMore };
}

// countText is a list's count once loaded: "3 schedules", "50+ schedules"
// (more to load), "1 schedule"; '' before the first answer.
function countText({ items, nextCursor, loaded }, one, many) {
  const n = items.length;
  return loaded ? `${n}${nextCursor ? '+' : ''} ${n === 1 ? one : many}` : '';
}

// mergeHead puts fresh, a new first page, in front of the items of old that
// come after it.
function mergeHead(old, fresh, key) {
  if (fresh.length === 0) return old;
  const ids = new Set(fresh.map((item) => key(item)));
  const lastId = key(fresh[fresh.length - 1]);
  const last = old.findIndex((item) => key(item) === lastId);
  const tail = (last >= 0 ? old.slice(last + 1) : old.slice(fresh.length)).filter((item) => !ids.has(key(item)));
  return fresh.concat(tail);
}
