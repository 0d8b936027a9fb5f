-- A trigger's refused events (services/signal-gateway/internal/trigger,
-- docs/schedules.md): the last 50 events the trigger refused after it was
-- found (an input its plan's schema or its input expression refused, an
-- archived or missing planRef, an event id sent before with another
-- payload), newest first, each {eventId, code, message, at}, shown with
-- the trigger as a schedule's skipped fires are. A refused event starts
-- nothing; this record is all it leaves.
--
-- A column with a constant default is additive: the rows stay format 1.
ALTER TABLE triggers ADD COLUMN recent_refusals jsonb NOT NULL DEFAULT '[]';
ALTER TABLE triggers ADD COLUMN refused_events bigint NOT NULL DEFAULT 0;
