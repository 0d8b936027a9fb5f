// The read API client: the API key, authenticated requests and signals.

const TOKEN_KEY = 'weft.token';

// memoryToken holds the key when localStorage is unavailable (private modes).
let memoryToken = null;

// ApiError is a failed request: the HTTP status and the error body's code,
// message and details ({"error": {"code", "message", "details"}}). A
// network failure has status 0 and code "NetworkError".
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
  }

  // describe renders "code: message" for people.
  describe() {
    return `${this.code}: ${this.message}`;
  }
}

export function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || memoryToken;
  } catch {
    return memoryToken;
  }
}

export function setToken(token) {
  memoryToken = token;
  try {
    localStorage.setItem(TOKEN_KEY, token);
  } catch {
    // The key stays in memory for this page only.
  }
}

export function clearToken() {
  memoryToken = null;
  try {
    localStorage.removeItem(TOKEN_KEY);
  } catch {
    // Nothing stored.
  }
}

// takeParam removes name=value from an &-separated string and returns
// [value or null, the rest]. It decodes with decodeURIComponent, so a "+"
// in a key stays a "+".
function takeParam(str, name) {
  let value = null;
  const rest = [];
  for (const part of str.split('&')) {
    if (part.startsWith(`${name}=`)) {
      try {
        value = decodeURIComponent(part.slice(name.length + 1));
      } catch {
        value = part.slice(name.length + 1);
      }
    } else if (part !== '') {
      rest.push(part);
    }
  }
  return [value, rest.join('&')];
}

// captureTokenFromURL takes token=KEY from the fragment (#token=KEY: a
// fragment never reaches a server), stores it, and removes it from the
// address bar and the history entry. A token= in the query (?token=KEY) is
// never used as a key: it has reached the server's and proxies' logs
// already. It is removed from the address all the same, so that it does not
// stay in the history either.
export function captureTokenFromURL() {
  const [token, hashRest] = takeParam(location.hash.replace(/^#/, ''), 'token');
  const [fromQuery, queryRest] = takeParam(location.search.replace(/^\?/, ''), 'token');
  if (token === null && fromQuery === null) return;
  const url = location.pathname + (queryRest ? `?${queryRest}` : '') + (hashRest ? `#${hashRest}` : '');
  history.replaceState(history.state, '', url);
  if (token !== null && token.trim() !== '') setToken(token.trim());
}

// request sends an authenticated request and returns {status, etag, data}.
// A 304 (after If-None-Match) returns data null. Any other status outside
// 2xx throws an ApiError; a 401 also dispatches "weft:unauthorized" on
// window so the app can ask for a key again.
export async function request(method, path, { body, etag, signal } = {}) {
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (etag) headers['If-None-Match'] = etag;
  if (body !== undefined) headers['Content-Type'] = 'application/json';

  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
      credentials: 'same-origin',
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ApiError(0, 'NetworkError', err?.message || 'the request failed', {});
  }
  if (res.status === 304) return { status: 304, etag, data: null };

  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const e = data && typeof data.error === 'object' && data.error ? data.error : {};
    const err = new ApiError(res.status, e.code || `HTTP ${res.status}`,
      e.message || res.statusText || 'the request failed', e.details || {});
    if (res.status === 401) {
      window.dispatchEvent(new CustomEvent('weft:unauthorized', { detail: err }));
    }
    throw err;
  }
  return { status: res.status, etag: res.headers.get('ETag'), data };
}

export function get(path, options) {
  return request('GET', path, options);
}

// newSignalId returns a fresh UUID. crypto.randomUUID exists only in secure
// contexts (https, localhost), so plain-http deployments get one built from
// crypto.getRandomValues.
export function newSignalId() {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// sendSignal posts a signal through the projector's gateway route with a
// fresh signalId, and returns the gateway's AcceptedSignalResult. payload
// is left out of the body when it is undefined.
export async function sendSignal(runId, signalName, payload) {
  const body = { signalName, signalId: newSignalId() };
  if (payload !== undefined) body.payload = payload;
  const res = await request('POST', `/gateway/v1/runs/${encodeURIComponent(runId)}/signals`, { body });
  return res.data || {};
}

// whoami returns the caller's key, tenant, role and allowed actions (GET
// /v1/whoami: {keyId, tenantId, role, actions}), asked once per key.
let whoamiOf = { token: null, promise: null };
export function whoami() {
  const token = getToken();
  if (whoamiOf.token !== token || !whoamiOf.promise) {
    whoamiOf = { token, promise: get('/v1/whoami').then((res) => res.data || {}) };
    whoamiOf.promise.catch(() => { whoamiOf = { token: null, promise: null }; });
  }
  return whoamiOf.promise;
}

// scheduleAction pauses ('pause'), resumes ('resume') or deletes
// ('delete') a schedule through the projector's gateway route; the gateway
// decides whether the key may (run.start).
export function scheduleAction(scheduleId, action) {
  const path = `/gateway/v1/schedules/${encodeURIComponent(scheduleId)}`;
  if (action === 'delete') return request('DELETE', path);
  return request('POST', `${path}/${action}`, { body: {} });
}

// triggersPath returns the path of a page of triggers (query: limit,
// cursor), read from the gateway like the schedules.
export function triggersPath(query) {
  return `/gateway/v1/triggers?${new URLSearchParams(query)}`;
}

// runPath returns the API path of a run.
export function runPath(runId) {
  return `/v1/runs/${encodeURIComponent(runId)}`;
}

// schedulesPath returns the path of a page of schedules (query: limit,
// cursor). The gateway holds schedules; the UI reads them through the
// projector's gateway route, like signals, so it stays on one origin.
export function schedulesPath(query) {
  return `/gateway/v1/schedules?${new URLSearchParams(query)}`;
}

// plansPath returns the path of a page of registered plan versions, newest
// first (query: limit, cursor), read from the gateway like the schedules.
export function plansPath(query) {
  return `/gateway/v1/plans?${new URLSearchParams(query)}`;
}

// planPath returns the path of registered plan planId of project
// projectId: a page of its versions, newest first, and latest (with
// cursor, the page it names); with version, the path of that version
// (with its plan), and with action too, of that action on it.
export function planPath(projectId, planId, { version, action, cursor } = {}) {
  const query = new URLSearchParams({ projectId });
  if (cursor) query.set('cursor', cursor);
  let path = `/gateway/v1/plans/${encodeURIComponent(planId)}`;
  if (version !== undefined) path += `/versions/${encodeURIComponent(version)}${action ? `/${action}` : ''}`;
  return `${path}?${query}`;
}

// planVersionAction archives ('archive') or restores ('restore') a plan
// version through the projector's gateway route and returns the version;
// the gateway decides whether the key may (run.start).
export async function planVersionAction(projectId, planId, version, action) {
  const res = await request('POST', planPath(projectId, planId, { version, action }), { body: {} });
  return res.data || {};
}

// startRun posts a start (api.StartRunRequest) through the projector's
// gateway route and returns the gateway's StartRunResult; a refusal
// throws an ApiError whose details.problems list what is wrong.
export async function startRun(start) {
  const res = await request('POST', '/gateway/v1/runs', { body: start });
  return res.data || {};
}

// rerunRun posts a rerun of run runId (api.RerunRequest: fromStepId,
// input, runRequestId) through the projector's gateway route and returns
// the gateway's StartRunResult for the new run; a refusal throws an
// ApiError (RerunRefused, InvalidArgument with details.problems, …).
export async function rerunRun(runId, rerun) {
  const res = await request('POST', `/gateway/v1/runs/${encodeURIComponent(runId)}/rerun`, { body: rerun });
  return res.data || {};
}
