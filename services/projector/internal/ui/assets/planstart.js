// "Start run" of a registered plan version: an environment, a JSON input
// editor prefilled with an example built from the version's inputSchema
// (exampleInput), and Start, which posts a start by planRef (POST
// /gateway/v1/runs, api.StartRunRequest) and opens the new run's page.
// As the input is edited (CHECK_DELAY after the last change) and when
// Start is pressed, it is checked in the browser: input that is not JSON
// is reported, and is never sent; input that breaks the inputSchema has
// each problem listed (inputschema.js: path, keyword, message, as the
// gateway names them), labelled as checked in the browser, and Start
// still sends it. The gateway's answer is the truth about the schema: a
// refusal lists every problem it names in their place.

import { ApiError, newSignalId, startRun } from './api.js';
import { h, icon, replace, runHref } from './dom.js';
import { checkInput, resolveRef } from './inputschema.js';
import { pretty } from './jsonview.js';

// ENV_KEY is the localStorage key of the environment last started in.
const ENV_KEY = 'weft.environment';
// EXAMPLE_DEPTH bounds how deep exampleInput follows properties and $refs.
const EXAMPLE_DEPTH = 8;
// CHECK_DELAY is how long, in ms, the editor waits after a change before
// checking the input in the browser.
const CHECK_DELAY = 300;

// createStartForm returns the start form of version (an api.PlanVersion
// with its plan; the start goes to its tenant and project); view is the
// app's view (its navigate and toast). An archived version's Start is
// disabled: the gateway refuses its starts.
export function createStartForm(view, version) {
  const env = h('input', {
    id: 'plan-start-env', class: 'input', testid: 'plan-start-env', required: true,
    autocomplete: 'off', spellcheck: 'false', placeholder: 'prod, dev, …', value: lastEnvironment(),
  });
  const editor = h('textarea', {
    id: 'plan-start-input', class: 'input json-editor', testid: 'plan-start-input', rows: '12',
    spellcheck: 'false', 'aria-describedby': 'plan-start-problems',
  });
  editor.value = pretty(exampleInput(version.plan?.inputSchema));
  const problems = h('div', { id: 'plan-start-problems', class: 'start-problems', role: 'alert', testid: 'plan-start-problems', hidden: true });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'plan-start-submit', disabled: Boolean(version.archivedAt) },
    icon('play'), 'Start run');
  const form = h('form', { class: 'start-form', testid: 'plan-start-form', novalidate: true },
    h('div', { class: 'start-field' }, h('label', { for: 'plan-start-env', class: 'label', text: 'Environment' }), env),
    h('div', { class: 'start-field' },
      h('label', { for: 'plan-start-input', class: 'label', text: 'Input (JSON)' }),
      editor,
      problems),
    version.archivedAt
      ? h('p', { class: 'muted small', testid: 'plan-start-archived', text: 'This version is archived: restore it to start runs of it.' })
      : null,
    h('div', { class: 'start-actions' }, submit));

  // runRequestId is kept while the start stays the same, so a Start sent
  // again after a lost answer is the same start (a duplicate), not a second run.
  let runRequestId = newSignalId();
  const fresh = () => { runRequestId = newSignalId(); };
  env.addEventListener('input', fresh);
  editor.addEventListener('input', fresh);

  const schema = version.plan?.inputSchema;
  let pending = null; // the timer of the check after the last change
  // check shows what the browser finds wrong with the editor's input and
  // returns the input parsed, or undefined when it is not JSON.
  const check = () => {
    clearTimeout(pending);
    let input;
    try {
      input = JSON.parse(editor.value);
    } catch (err) {
      showProblems(problems, { text: `The input is not valid JSON: ${err.message}`, testid: 'plan-start-json-error' });
      return undefined;
    }
    showProblems(problems, schemaProblems(schema, input), 'plan-start-local');
    return input;
  };
  editor.addEventListener('input', () => {
    clearTimeout(pending);
    pending = setTimeout(check, CHECK_DELAY);
  });

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const environmentId = env.value.trim();
    if (!environmentId) {
      showProblems(problems, { text: 'Name the environment to start the run in.' });
      env.focus();
      return;
    }
    const input = check();
    if (input === undefined) {
      editor.focus();
      return;
    }
    submit.disabled = true;
    try {
      const res = await startRun({
        tenantId: version.tenantId, projectId: version.projectId, environmentId,
        planRef: { planId: version.planId, planVersion: version.planVersion }, input, runRequestId,
      });
      rememberEnvironment(environmentId);
      view.toast({ kind: 'success', text: res.duplicate ? `Run ${res.runId} was already started` : `Run ${res.runId} started` });
      view.navigate(runHref(res.runId));
    } catch (err) {
      showProblems(problems, refusal(err));
    } finally {
      submit.disabled = Boolean(version.archivedAt);
    }
  });
  return form;
}

// refusal is what showProblems shows of a failed request, a start unless
// what names another: the problems of a 400, else the error.
export function refusal(err, what = 'start') {
  if (!(err instanceof ApiError)) return { text: String(err) };
  const list = Array.isArray(err.details?.problems) ? err.details.problems : [];
  return list.length ? { text: `The gateway refused the ${what} — ${err.code}:`, list } : { text: err.describe() };
}

// schemaProblems is what showProblems shows of input's problems against
// schema found in the browser (checkInput), or null when it finds none.
function schemaProblems(schema, input) {
  const list = checkInput(schema, input);
  if (!list.length) return null;
  const n = list.length === 1 ? '1 problem' : `${list.length} problems`;
  return { text: `Checked in the browser: ${n} with the input schema. Start still sends it; the gateway decides.`, list };
}

// showProblems shows in box what is wrong ({text, testid, list}: list
// holds api.Problems), or hides it for null. The head's testid is
// what.testid, else prefix-error; each problem's row is prefix-problem.
export function showProblems(box, what, prefix = 'plan-start') {
  box.hidden = !what;
  if (!what) {
    replace(box);
    return;
  }
  replace(box,
    h('div', { class: 'start-problems-head', testid: what.testid || `${prefix}-error` }, icon('alert'), what.text),
    what.list
      ? h('table', { class: 'table compact start-problems-table' },
        h('thead', {}, h('tr', {}, ['Path', 'Keyword', 'Message'].map((text) => h('th', { text })))),
        h('tbody', {}, what.list.map((p) => h('tr', {
          testid: `${prefix}-problem`, 'data-path': p.path ?? '', 'data-keyword': p.keyword ?? '', 'data-code': p.code ?? '',
        },
        h('td', {}, h('code', { testid: 'problem-path', text: p.path || '(the whole body)' })),
        h('td', { testid: 'problem-keyword', text: p.keyword || p.code || '' }),
        h('td', { testid: 'problem-message', text: p.message || '' })))))
      : null);
}

// exampleInput returns an input shaped like schema (a plan's inputSchema,
// JSON Schema), to start the editor from: each value its const, default,
// first example or first enum member, else an empty value of its type
// (the minimum of a number), following properties and $refs into $defs.
// Without a schema it is {}. It fits the schema's shape, not always its
// constraints (an empty string under minLength): the gateway checks.
export function exampleInput(schema) {
  const root = schema && typeof schema === 'object' ? schema : null;
  const v = root ? example(root, root, 0) : undefined;
  return v === undefined ? {} : v;
}

function example(schema, root, depth) {
  if (!schema || typeof schema !== 'object' || depth > EXAMPLE_DEPTH) return undefined;
  if (typeof schema.$ref === 'string') return example(resolveRef(root, schema.$ref), root, depth + 1);
  if ('const' in schema) return schema.const;
  if ('default' in schema) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => t && t !== 'null') ?? types[0] ?? (schema.properties ? 'object' : undefined);
  switch (type) {
    case 'object': {
      const out = {};
      for (const [name, sub] of Object.entries(schema.properties || {})) {
        const v = example(sub, root, depth + 1);
        out[name] = v === undefined ? null : v;
      }
      return out;
    }
    case 'array': return [];
    case 'string': return '';
    case 'number': case 'integer': return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'boolean': return false;
    case 'null': return null;
    default: return undefined;
  }
}

function lastEnvironment() {
  try {
    return localStorage.getItem(ENV_KEY) || '';
  } catch {
    return '';
  }
}

function rememberEnvironment(environmentId) {
  try {
    localStorage.setItem(ENV_KEY, environmentId);
  } catch {
    // Not remembered.
  }
}
