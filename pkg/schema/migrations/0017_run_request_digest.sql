-- The digest of a start's request beside its run request (services/
-- signal-gateway/internal/intake, docs/api.md "Idempotency"): the SHA-256
-- of the run request's key, its plan and its input, the two in canonical
-- JSON. A repeat of the tuple whose digest differs sent another request
-- under the same runRequestId (or a trigger event another payload under
-- the same eventId), and is refused with 409 IdempotencyConflict instead
-- of being answered with the first start's run.
--
-- NULL means not recorded: the row was stored by a build older than this
-- column. A repeat of such a row is answered as a duplicate, as before,
-- whatever its body. An expired row reclaimed by a new start takes the new
-- start's digest.
--
-- A nullable column without a default is additive and rewrites no rows:
-- the rows stay format 1 (docs/persisted-format.md).
ALTER TABLE run_requests ADD COLUMN request_digest bytea
    CHECK (request_digest IS NULL OR length(request_digest) = 32);
