// A Weft activity worker in Node.js: the plain worker protocol of docs/worker-protocol.md over
// NATS JetStream, with the npm package nats and no Weft code. It serves the task queue "node"
// (WEFT_QUEUE) with the activity word-stats. Beside `weft dev` it finds the NATS server and its
// user in $WEFT_DEV_DIR/endpoints.json (default .weft/dev); WEFT_NATS_URL takes precedence.
// Not shown: reconciliation (keyed attempts fail, non-retryably), heartbeats and cancelling a
// running attempt; the Go SDK (pkg/worker) does all three.
import { connect, AckPolicy, DeliverPolicy, nanos } from "nats";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";

// Each activity takes the step's input and returns its output; it fails by throwing, for good by
// throwing failure(code, message, false).
const activities = {
  // {"text": T} → the number of words of T, its longest word, and which runtime counted them.
  "word-stats": async ({ text }) => {
    const words = String(text ?? "").split(/\s+/).filter(Boolean);
    const longest = words.reduce((a, w) => (w.length > a.length ? w : a), "");
    return { words: words.length, longest, countedBy: `node ${process.version}` };
  },
};

// msgID is a result's Nats-Msg-Id (docs/worker-protocol.md): its idempotency
// key bound to the task's token, so a forger without the task cannot claim it.
const msgID = (r) => r.token
  ? "rt1-" + createHash("sha256").update(r.token).update("\0").update(r.idempotencyKey).digest("hex")
  : r.idempotencyKey;
const queue = process.env.WEFT_QUEUE ?? "node"; // a plain token: its lanes stream is WEFT_TASKS_<queue>
if (!/^[A-Za-z0-9_-]+$/.test(queue)) throw new Error(`queue ${queue}: use letters, digits, - and _`);
const workerId = `${hostname()}/${process.pid}`, slots = 4, ackWait = 30_000, budget = 3_000;
const log = (msg, f = {}) => console.error(JSON.stringify({ time: new Date().toISOString(), level: "INFO",
  msg, component: "worker", queue, worker_id: workerId, ...f }));

function natsOptions() { // the password never goes in a log line
  if (process.env.WEFT_NATS_URL) {
    const u = new URL(process.env.WEFT_NATS_URL);
    return { servers: u.host, user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) };
  }
  const e = JSON.parse(readFileSync(join(process.env.WEFT_DEV_DIR ?? ".weft/dev", "endpoints.json"), "utf8"));
  return { servers: new URL(e.nats).host, user: e.natsUser, pass: readFileSync(e.natsPasswordFile, "utf8").trim() };
}
const opts = natsOptions();
// Replies on _INBOX_<user>, as Weft's services: deploy/nats.conf lets each user read only its own.
const nc = await connect({ ...opts, inboxPrefix: opts.user ? `_INBOX_${opts.user}` : undefined, name: "node-worker" });
const js = nc.jetstream(), jsm = await nc.jetstreamManager({ checkAPI: false });

// The result's key: SHA-256 of the escaped ids joined by "|" (pkg/events/testdata/README.md).
const key = (...ids) => createHash("sha256")
  .update(ids.map((s) => s.replace(/\\/g, "\\\\").replace(/\|/g, "\\|")).join("|"), "utf8").digest("hex");
const failure = (code, message, retryable, category = "ACTIVITY") => ({ code, message, retryable, category });

// The subjects of the queue that hold tasks: weft.tasks.<queue> (no tenant) on WEFT_TASKS and a
// lane per tenant, weft.tasks.<queue>.<lane>, on WEFT_TASKS_<queue>, which the engine creates.
async function subjectsWithTasks() {
  const found = [];
  for (const [stream, filter] of [["WEFT_TASKS", `weft.tasks.${queue}`], [`WEFT_TASKS_${queue}`, `weft.tasks.${queue}.*`]]) {
    const info = await jsm.streams.info(stream, { subjects_filter: filter }).catch((e) => {
      if (e.api_error?.err_code === 10059) return null; // no tenant's task yet: no lanes stream
      throw e;
    });
    for (const [subject, n] of Object.entries(info?.state.subjects ?? {})) if (n > 0) found.push([stream, subject]);
  }
  return found;
}

const consumers = new Map(); // durable name → consumer, created as streams.TaskConsumer and TaskLaneConsumer do
async function consumer(stream, subject) {
  const lane = subject.split(".")[3], durable = lane ? `tasks-${queue}~${lane}` : `tasks-${queue}`;
  if (!consumers.has(durable)) {
    await jsm.consumers.add(stream, { durable_name: durable, filter_subject: subject,
      description: `Weft workers of task queue ${queue}` + (lane ? `, tenant lane ${lane}` : ""),
      ack_policy: AckPolicy.Explicit, ack_wait: nanos(ackWait), max_deliver: 10, deliver_policy: DeliverPolicy.All,
      ...(lane && { inactive_threshold: nanos(3_600_000) }) });
    consumers.set(durable, await js.consumers.get(stream, durable));
  }
  return consumers.get(durable);
}

// Whether the run's last cancel notice covers the attempt; a failed lookup starts it.
async function cancelled(t) {
  const notice = await jsm.direct.getMessage("WEFT_CANCELS", { last_by_subj: `weft.cancel.${t.runId}` })
    .then((m) => m.json(), () => null);
  const upTo = notice?.attempts?.[t.stepId];
  return !!notice && (!notice.stepIds?.length || (notice.stepIds.includes(t.stepId)
    && (upTo === undefined || Number(upTo) >= Number(t.logicalAttemptId))));
}

async function handle(m) {
  let t;
  try { t = JSON.parse(m.string()); } catch { t = null; }
  if (!t || t.schemaVersion > 1) { // redelivering it would fail alike; the engine's sweep resends a newer one
    log("worker: not a task this worker reads", { level: "ERROR" });
    return m.term();
  }
  const ids = { run_id: t.runId, step_id: t.stepId, logical_attempt_id: t.logicalAttemptId,
    engine_attempt_id: String(m.info.redeliveryCount), activity: t.activity };
  if (await cancelled(t)) { // the engine recorded the step CANCELLED: report nothing
    log("worker: attempt not started, its run is cancelled", ids);
    return m.term();
  }
  const startedAt = new Date().toISOString(), began = Date.now();
  log("worker: attempt started", ids);
  const result = (kind, more) => ({ schemaVersion: 1, kind, runId: t.runId, stepId: t.stepId,
    logicalAttemptId: t.logicalAttemptId, engineAttemptId: ids.engine_attempt_id, workerId,
    idempotencyKey: key(t.runId, t.stepId, t.logicalAttemptId, kind, t.planVersion),
    emittedAt: new Date().toISOString(), startedAt, token: t.token, ...more }); // token: the task's, unchanged
  const publish = (r) => js.publish(`weft.results.${t.runId}`, JSON.stringify(r), { msgID: msgID(r), timeout: budget });
  const alive = setInterval(() => m.working(), ackWait / 3);
  let final;
  if (t.operationId) { // keyed: a worker without reconciliation must not run it
    final = result("StepFailed", { error: failure("RECONCILIATION_UNSUPPORTED", "this worker does not reconcile keyed attempts", false, "WORKER"),
      reconcile: { operationId: t.operationId, idempotencyKey: t.idempotencyKey, status: "failed" } });
  } else if (!activities[t.activity]) {
    final = result("StepFailed", { error: failure("UNKNOWN_ACTIVITY", `this worker runs ${Object.keys(activities)}`, false, "WORKER") });
  } else {
    await publish(result("StepStarted")).catch(() => {}); // an unkeyed attempt's StepStarted fails open
    let timer;
    const timeout = new Promise((_, no) => { timer = setTimeout(() => no(failure("TIMEOUT", "the attempt timed out", true, "TIMEOUT")), t.timeoutMs || 300_000); });
    try {
      final = result("StepCompleted", { output: (await Promise.race([activities[t.activity](t.input ?? {}, t), timeout])) ?? null });
    } catch (e) {
      const own = typeof e?.retryable === "boolean"; // a failure() thrown; anything else is retryable
      final = result("StepFailed", { error: own ? e : failure("ACTIVITY_ERROR", String(e?.message ?? e), true) });
    } finally { clearTimeout(timer); }
  }
  try {
    await publish(final); // a final result never fails open: without its PubAck, the task goes back
    await m.ackAck();
    log("worker: attempt ended", { ...ids, outcome: final.kind === "StepCompleted" ? "completed" : "failed",
      settled_by: final.error?.category === "WORKER" ? "worker" : "activity", published: true, acked: true,
      duration_ms: Date.now() - began, ...(final.error && { code: final.error.code }) });
  } catch (e) {
    m.nak(2_000);
    log("worker: attempt ended", { ...ids, outcome: "abandoned", published: false, acked: false, error: String(e) });
  } finally { clearInterval(alive); }
}

// Wake on a task's publish (core NATS sees JetStream's), else poll every second.
let waiters = [], stopping = false, turn = 0;
const wake = () => new Promise((r) => { const t = setTimeout(r, 1_000); waiters.push(() => { clearTimeout(t); r(); }); });
for (const s of [`weft.tasks.${queue}`, `weft.tasks.${queue}.*`]) nc.subscribe(s, { callback: () => waiters.splice(0).forEach((w) => w()) });

async function slot() { // one task at a time, from the next subject in round-robin order that has one
  while (!stopping) {
    try {
      const subjects = await subjectsWithTasks(), first = turn++;
      let m = null;
      for (let i = 0; i < subjects.length && !m; i++) m = await (await consumer(...subjects[(first + i) % subjects.length])).next({ expires: 1_000 });
      if (m) await handle(m); else await wake();
    } catch (e) {
      log("worker: pull failed", { level: "WARN", error: String(e) });
      consumers.clear(); // made again: a lane's consumer goes after an hour without pulls
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

const stop = () => { stopping = true; waiters.splice(0).forEach((w) => w()); };
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, stop);
// A connection closed for good (its credentials refused, its reconnects
// spent) never comes back: stop and exit 1 instead of pulling in vain.
let lost = null;
nc.closed().then((err) => {
  if (stopping) return;
  lost = err || new Error("connection closed");
  log("worker: the NATS connection is closed for good; stopping", { level: "ERROR", error: String(lost) });
  stop();
});
log("worker started", { activities: Object.keys(activities), slots });
await Promise.all(Array.from({ length: slots }, slot)); // running attempts finish first
if (!nc.isClosed()) await nc.drain();
log("worker stopped");
if (lost) process.exit(1);
