// The browser's check of a run's input against its plan's inputSchema,
// for the subset of JSON Schema 2020-12 a plan may use (docs/plans.md,
// "Input schema"; plan.InputSchemaKeywords): type, properties, required,
// items, enum, const, minimum, maximum, minLength, maxLength, pattern,
// additionalProperties, $defs and $ref inside the schema, and true and
// false schemas; title, description, default, examples, $comment and
// $schema check nothing. Each problem is told as the gateway tells it
// (plan.Validated.CheckInputSchema, then the start's api.Problem): the
// path of the value at fault from "input" ("input.lines[0].sku"), the
// keyword, and a message led by it ("minimum: got -1, want 0"). It is a
// preview: the gateway's answer is the truth. What the browser cannot
// decide the same way (a pattern JavaScript does not compile, a $ref
// that points nowhere or only back to itself) is left to the gateway.

// TYPES is the order the validator names a schema's types in.
const TYPES = ['null', 'boolean', 'number', 'integer', 'string', 'array', 'object'];

// checkInput returns the problems of input (a parsed JSON value) against
// schema (a plan's inputSchema): [{path, keyword, message}], ordered by
// the JSON pointer of the value at fault, then keyword, then message, as
// the gateway orders them; [] when it fits and when there is no schema.
export function checkInput(schema, input) {
  if (schema === undefined || schema === null) return [];
  const found = [];
  validate({ root: schema, found, refs: new Set() }, schema, input, []);
  found.sort((a, b) => compare(a.pointer, b.pointer) || compare(a.keyword, b.keyword) || compare(a.message, b.message));
  return found
    .filter((p, i) => i === 0 || compare(p.pointer, found[i - 1].pointer) || p.keyword !== found[i - 1].keyword || p.message !== found[i - 1].message)
    .map((p) => ({ path: inputPath(input, p.tokens), keyword: p.keyword, message: `${p.keyword}: ${p.message}` }));
}

// resolveRef returns the schema a "#…" $ref points to inside root (a JSON
// pointer in a URI fragment), or undefined.
export function resolveRef(root, ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#')) return undefined;
  const frag = ref.slice(1);
  if (frag !== '' && !frag.startsWith('/')) return undefined; // an anchor: not in the subset
  let at = root;
  for (const part of frag.split('/').slice(1)) {
    let key;
    try {
      key = decodeURIComponent(part);
    } catch {
      return undefined;
    }
    key = key.replaceAll('~1', '/').replaceAll('~0', '~');
    at = at && typeof at === 'object' && Object.hasOwn(at, key) ? at[key] : undefined;
  }
  return at;
}

// validate adds to c.found the problems of v, at tokens (the input's
// pointer tokens), against schema, in the validator's order: a false
// schema, type, const and enum each end the check of v; $ref and the
// checks of v's type add up.
function validate(c, schema, v, tokens) {
  if (schema === true) return;
  if (schema === false) {
    add(c, tokens, 'false', 'no value is allowed here');
    return;
  }
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return;
  const t = typeOf(v);
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((x) => TYPES.includes(x));
  if (types.length && !types.includes(t) && !(t === 'number' && types.includes('integer') && Number.isInteger(v))) {
    add(c, tokens, 'type', `got ${t}, want ${TYPES.filter((x) => types.includes(x)).join(' or ')}`);
    return;
  }
  if ('const' in schema && !equal(v, schema.const)) {
    add(c, tokens, 'const', isPrimitive(schema.const) ? `value must be ${display(schema.const)}` : 'const failed');
    return;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((w) => equal(v, w))) {
    add(c, tokens, 'enum', enumMessage(schema.enum));
    return;
  }
  if (typeof schema.$ref === 'string') validateRef(c, schema.$ref, v, tokens);
  switch (t) {
    case 'object': validateObject(c, schema, v, tokens); break;
    case 'array': if ('items' in schema) v.forEach((el, i) => validate(c, schema.items, el, [...tokens, String(i)])); break;
    case 'string': validateString(c, schema, v, tokens); break;
    case 'number': validateNumber(c, schema, v, tokens); break;
    default:
  }
}

// validateRef checks v against the schema ref points to, unless it
// points nowhere or back to a $ref already followed at the same place.
function validateRef(c, ref, v, tokens) {
  const target = resolveRef(c.root, ref);
  const key = `${ref} @ ${pointer(tokens)}`;
  if (target === undefined || c.refs.has(key)) return;
  c.refs.add(key);
  validate(c, target, v, tokens);
  c.refs.delete(key);
}

function validateObject(c, schema, obj, tokens) {
  if (Array.isArray(schema.required)) {
    for (const name of schema.required) {
      if (typeof name === 'string' && !Object.hasOwn(obj, name)) add(c, [...tokens, name], 'required', 'required property is missing');
    }
  }
  const props = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
  for (const [name, value] of Object.entries(obj)) {
    if (Object.hasOwn(props, name)) {
      validate(c, props[name], value, [...tokens, name]);
    } else if (schema.additionalProperties === false) {
      add(c, [...tokens, name], 'additionalProperties', 'property is not allowed');
    } else if ('additionalProperties' in schema) {
      validate(c, schema.additionalProperties, value, [...tokens, name]);
    }
  }
}

function validateString(c, schema, s, tokens) {
  const n = [...s].length; // code points, as the validator counts
  const { minLength: lo, maxLength: hi } = schema;
  if (Number.isInteger(lo) && n < lo) add(c, tokens, 'minLength', `got ${grouped(String(n))}, want ${grouped(String(lo))}`);
  if (Number.isInteger(hi) && n > hi) add(c, tokens, 'maxLength', `got ${grouped(String(n))}, want ${grouped(String(hi))}`);
  const re = typeof schema.pattern === 'string' ? compilePattern(schema.pattern) : null;
  if (re && !re.test(s)) add(c, tokens, 'pattern', `${quote(s)} does not match pattern ${quote(schema.pattern)}`);
}

function validateNumber(c, schema, x, tokens) {
  if (typeof schema.minimum === 'number' && x < schema.minimum) add(c, tokens, 'minimum', `got ${goFloat(x)}, want ${goFloat(schema.minimum)}`);
  if (typeof schema.maximum === 'number' && x > schema.maximum) add(c, tokens, 'maximum', `got ${goFloat(x)}, want ${goFloat(schema.maximum)}`);
}

// compilePattern returns pattern (Go's RE2 syntax) as a RegExp, unanchored
// as JSON Schema's pattern is, or null when JavaScript does not compile it.
function compilePattern(pattern) {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return null;
  }
}

function add(c, tokens, keyword, message) {
  c.found.push({ tokens, pointer: pointer(tokens), keyword, message });
}

// inputPath renders tokens, the pointer tokens of a place in input, as the
// gateway does: "input", then "[i]" for a token where input holds an
// array and it is an index, else ".name" or `["name"]`.
function inputPath(input, tokens) {
  let path = 'input';
  let doc = input;
  for (const tok of tokens) {
    if (Array.isArray(doc) && /^\d+$/.test(tok)) {
      path += `[${Number(tok)}]`;
      doc = doc[Number(tok)];
    } else {
      path += /^[A-Za-z_][A-Za-z0-9_]*$/.test(tok) ? `.${tok}` : `[${memberName(tok)}]`;
      doc = doc && typeof doc === 'object' && !Array.isArray(doc) ? doc[tok] : undefined;
    }
  }
  return path;
}

// MAX_NAME_BYTES bounds how much of a member's name a path repeats.
const MAX_NAME_BYTES = 64;

// memberName renders a name that is no identifier for a path as the
// gateway does (strictjson.Quote): Go-quoted, cut to 64 bytes of UTF-8
// at a character boundary, with "…" after the closing quote.
function memberName(name) {
  let bytes = 0;
  let kept = '';
  for (const ch of name) {
    bytes += new TextEncoder().encode(ch).length;
    if (bytes > MAX_NAME_BYTES) return `${goQuote(kept)}…`;
    kept += ch;
  }
  return goQuote(name);
}

// pointer renders tokens as a JSON pointer (RFC 6901).
function pointer(tokens) {
  return tokens.map((t) => `/${t.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function typeOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v; // boolean, number, string, object
}

function isPrimitive(v) {
  return v === null || typeof v !== 'object';
}

function equal(a, b) {
  if (a === b) return true;
  if (typeOf(a) !== typeOf(b) || typeof a !== 'object' || a === null) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
}

function enumMessage(want) {
  if (!want.every(isPrimitive)) return 'enum failed';
  return want.length === 1 ? `value must be ${display(want[0])}` : `value must be one of ${want.map(display).join(', ')}`;
}

// display renders a primitive schema value as the validator does: a
// string in single quotes, null as <nil>, a number as the schema writes
// it (as JavaScript writes it back, here).
function display(v) {
  if (typeof v === 'string') return quote(v);
  return v === null ? '<nil>' : String(v);
}

// quote renders s in single quotes as the validator does: Go's %q, with
// `"` unescaped and `'` escaped.
function quote(s) {
  return `'${goQuote(s).slice(1, -1).replaceAll('\\"', '"').replaceAll("'", "\\'")}'`;
}

// NAMED are the escapes of Go's strconv.Quote that have a letter.
const NAMED = { 7: '\\a', 8: '\\b', 12: '\\f', 10: '\\n', 13: '\\r', 9: '\\t', 11: '\\v', 34: '\\"', 92: '\\\\' };

// goQuote renders s as Go's strconv.Quote does for printable text and
// ASCII controls.
function goQuote(s) {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    if (NAMED[cp]) out += NAMED[cp];
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp >= 0x80 && cp < 0xa0) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

// SUPERSCRIPT holds the superscript digits, by value.
const SUPERSCRIPT = '⁰¹²³⁴⁵⁶⁷⁸⁹';

// goFloat renders x as the validator's English printer does a float64's
// %v: the shortest digits, grouped in thousands ("123,456.5"), or with a
// power of ten ("1.234567×10⁰⁶", "1.5×10⁻⁰⁵") below 1e-4 and from 1e6 on.
function goFloat(x) {
  if (x === 0 || !Number.isFinite(x)) return x === 0 ? '0' : String(x);
  const [mant, e] = x.toExponential().split('e');
  const exp = Number(e);
  if (exp >= -4 && exp < 6) return grouped(String(x));
  const power = String(Math.abs(exp)).padStart(2, '0').replace(/\d/g, (d) => SUPERSCRIPT[d]);
  return `${mant}×10${exp < 0 ? '⁻' : ''}${power}`;
}

// grouped puts a comma between each three digits of the whole part of
// the decimal s, as the validator's English printer does.
function grouped(s) {
  const [whole, frac] = s.split('.');
  const g = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return frac === undefined ? g : `${g}.${frac}`;
}

// compare orders strings by UTF-16 code units.
function compare(a, b) {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}
