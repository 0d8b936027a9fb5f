// Package eventlog is Weft's event log in Postgres: the authoritative,
// append-only history of every run (state-store contract, execution
// semantics §1). Schema and SQL functions live in
// pkg/schema/migrations/0001_event_log.sql; docs/event-log.md explains
// the design.
//
// The log promises, for every run:
//   - runSeq starts at 1 and increases by exactly 1 per persisted event:
//     it is assigned under the run head's row lock in the transaction of the
//     insert, so a rolled-back append leaves no gap;
//   - at most one event per (runId, runSeq), per (runId, idempotencyKey),
//     and per eventId across the whole log;
//   - a duplicate idempotency key writes nothing and returns the runSeq of
//     the event already stored, with Idempotent set;
//   - an optional compare-and-swap on the run head (ErrConflict);
//   - events are never updated or deleted, enforced by the database, except
//     by RunDelete, which removes a whole run for retention.
//
// Appends are queued on the caller's pgx.Batch (EventsAppendManyBatch,
// EventsAppendNewBatch), so events commit with whatever else the caller
// writes in its transaction; every writer of events appends through one
// unit of work, pkg/journal's Write, which commits the events'
// bus copies to the outbox with them. Other writes have a …Tx form that
// joins the caller's transaction. Writes expect
// READ COMMITTED; under REPEATABLE READ or SERIALIZABLE, concurrent appends to
// one run fail with a serialization error the caller must retry.
package eventlog
