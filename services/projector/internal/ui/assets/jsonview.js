// A JSON value for people: pretty-printed, in a block that can be closed,
// cut at LIMIT characters with a button that shows the rest. The value
// reaches the page as a text node only.

import { h } from './dom.js';

// LIMIT is how many characters of a value are shown before "Show full value".
export const LIMIT = 2000;

// pretty renders a JSON value with two-space indentation.
export function pretty(value) {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

// jsonBlock returns a <details> titled label that shows value: open while
// state.open (default true), whole once state.full. state is kept by the
// caller across redraws, so a reader's choices survive a refresh; note is
// an optional line under the title. testid names the block.
export function jsonBlock(label, value, testid, state = {}, note = null) {
  const text = pretty(value);
  const cut = text.length > LIMIT && !state.full;
  const pre = h('pre', { class: 'json', testid: `${testid}-json`, text: cut ? `${text.slice(0, LIMIT)}…` : text });
  let more = null;
  if (cut) {
    more = h('button', { type: 'button', class: 'btn btn-sm', testid: `${testid}-full`,
      text: `Show full value (${text.length.toLocaleString()} characters)` });
    more.addEventListener('click', () => {
      state.full = true;
      pre.textContent = text;
      block.dataset.truncated = 'false';
      more.remove();
    });
  }
  const block = h('details', { class: 'json-block', testid, open: state.open !== false, 'data-truncated': cut ? 'true' : 'false' },
    h('summary', { class: 'json-label' }, label),
    note ? h('div', { class: 'muted small', text: note }) : null,
    pre, more);
  block.addEventListener('toggle', () => { state.open = block.open; });
  return block;
}
