// Reruns (docs/api.md, "Rerun from a step"). On the page of a run that has
// ended, every step offers "Rerun from here" to a key that may start runs
// (run.start): it opens an input editor prefilled with the run's input,
// and Rerun posts POST /gateway/v1/runs/{runId}/rerun (api.RerunRequest)
// and opens the new run's page. Input that is not JSON is reported before
// anything is sent; a refusal shows the gateway's message, and the
// problems it names, beside the editor. A rerun's page names its source
// (rerunOf), and each step it did not run carries a "reused" chip linking
// to the run whose outcome it copied (reusedFrom).

import { newSignalId, rerunRun } from './api.js';
import { h, icon, isTerminal, runHref } from './dom.js';
import { shortId } from './format.js';
import { pretty } from './jsonview.js';
import { refusal, showProblems } from './planstart.js';

// mayRerun reports whether a key whose GET /v1/whoami answer is me may
// rerun a run whose status is status: the run has ended, and the key may
// start runs, as a rerun is a start.
export function mayRerun(me, status) {
  return Array.isArray(me?.actions) && me.actions.includes('run.start') && isTerminal(status);
}

// rerunButton is step stepId's "Rerun from here", or null when actions
// (the run page's step actions) do not offer reruns now.
export function rerunButton(stepId, actions) {
  if (!actions.rerun || !actions.mayRerun?.()) return null;
  const b = h('button', { type: 'button', class: 'btn btn-sm', testid: 'btn-rerun-step', 'data-step-id': stepId },
    icon('retry'), 'Rerun from here');
  b.addEventListener('click', () => actions.rerun(stepId));
  return b;
}

// rerunOfMark is the run header's "Rerun of <run> from <step>", linking
// to the source run and to the step on its page; null for a run that is
// no rerun.
export function rerunOfMark(rerunOf) {
  if (!rerunOf?.runId) return null;
  return h('div', { class: 'run-rerun-of', testid: 'run-rerun-of', 'data-run-id': rerunOf.runId, 'data-step-id': rerunOf.fromStepId || '' },
    icon('retry'), 'Rerun of ',
    h('a', { href: runHref(rerunOf.runId), 'data-nav': true, class: 'mono', testid: 'run-rerun-of-link', title: rerunOf.runId, text: shortId(rerunOf.runId) }),
    ' from ',
    h('a', { href: runHref(rerunOf.runId, rerunOf.fromStepId), 'data-nav': true, testid: 'run-rerun-of-step' }, h('code', { text: rerunOf.fromStepId || '?' })));
}

// reusedChip marks a step a rerun did not run (StepSnapshot.reusedFrom:
// the source run's event whose outcome it copied), linking to that run;
// null for a step that ran.
export function reusedChip(ref) {
  if (!ref?.runId) return null;
  return h('span', {
    class: 'chip chip-reused', testid: 'step-reused', 'data-run-id': ref.runId,
    title: `Not run here: its outcome is copied from run ${ref.runId} (runSeq ${ref.runSeq ?? '?'})`,
  },
  'reused, not run · from ',
  h('a', { href: runHref(ref.runId), 'data-nav': true, class: 'mono', testid: 'step-reused-link', text: shortId(ref.runId) }));
}

// createRerunForm returns {el, open(stepId, snap)}: the card that reruns
// run runId, hidden until open names the step to rerun from and gives
// the run's snapshot, whose input it starts from. view is the app's view
// (its navigate and toast).
export function createRerunForm(view, runId) {
  const from = h('code', { testid: 'rerun-from' });
  const editor = h('textarea', {
    id: 'rerun-input', class: 'input json-editor', testid: 'rerun-input', rows: '10',
    spellcheck: 'false', 'aria-describedby': 'rerun-problems',
  });
  const problems = h('div', { id: 'rerun-problems', class: 'start-problems', role: 'alert', testid: 'rerun-problems', hidden: true });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'rerun-submit' }, icon('retry'), 'Rerun');
  const close = h('button', { type: 'button', class: 'btn', testid: 'rerun-close' }, 'Close');
  const form = h('form', { class: 'start-form', testid: 'rerun-editor', novalidate: true },
    h('div', { class: 'start-field' },
      h('label', { for: 'rerun-input', class: 'label', text: 'Input (JSON; empty: the run’s own input)' }),
      editor,
      problems),
    h('div', { class: 'start-actions rerun-actions' }, close, submit));
  const el = h('section', { class: 'card rerun-card', testid: 'rerun-form', hidden: true },
    h('div', { class: 'card-head' },
      h('h2', {}, 'Rerun from ', from),
      h('span', { class: 'muted small', text: 'a new run: this step and those after it run anew; the others keep their outcome and do not run' })),
    form);

  let stepId = null;
  // runRequestId is kept while the rerun stays the same, so a Rerun sent
  // again after a lost answer is the same rerun (a duplicate), not a second run.
  let runRequestId = newSignalId();
  const fresh = () => { runRequestId = newSignalId(); };
  editor.addEventListener('input', fresh);
  close.addEventListener('click', () => { el.hidden = true; });

  function open(id, snap) {
    fresh();
    stepId = id;
    from.textContent = id;
    editor.value = snap?.input === undefined ? '' : pretty(snap.input);
    showProblems(problems, null, 'rerun');
    el.hidden = false;
    el.scrollIntoView?.({ block: 'nearest' });
    editor.focus();
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { fromStepId: stepId, runRequestId };
    if (editor.value.trim() !== '') {
      try {
        body.input = JSON.parse(editor.value);
      } catch (err) {
        showProblems(problems, { text: `The input is not valid JSON: ${err.message}`, testid: 'rerun-json-error' }, 'rerun');
        editor.focus();
        return;
      }
    }
    showProblems(problems, null, 'rerun');
    submit.disabled = true;
    try {
      const res = await rerunRun(runId, body);
      view.toast({ kind: 'success', text: res.duplicate ? `Run ${res.runId} was already started` : `Rerun ${res.runId} started` });
      view.navigate(runHref(res.runId));
    } catch (err) {
      showProblems(problems, refusal(err, 'rerun'), 'rerun');
    } finally {
      submit.disabled = false;
    }
  });
  return { el, open };
}
