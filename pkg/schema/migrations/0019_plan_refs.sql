-- Schedules and triggers that name a registered plan version
-- (services/signal-gateway/internal/schedule and internal/trigger,
-- docs/schedules.md "A registered plan"): plan_ref_id and plan_ref_version
-- are the planRef, resolved again at each fire or event, and plan is then
-- NULL; plan_id and plan_version hold the ref's planId and planVersion
-- (which may be 'latest'), as they hold a carried plan's. Exactly one of
-- plan and the ref is set.
--
-- Nullable columns without a default are additive and rewrite no rows:
-- the rows stay format 1 (docs/persisted-format.md). A build older than
-- these columns does not know planRef: create schedules and triggers by
-- planRef only once every gateway resolves it.
ALTER TABLE schedules
    ALTER COLUMN plan DROP NOT NULL,
    ADD COLUMN plan_ref_id text,
    ADD COLUMN plan_ref_version text,
    ADD CONSTRAINT schedules_plan_or_ref CHECK (
        (plan IS NOT NULL AND plan_ref_id IS NULL AND plan_ref_version IS NULL)
        OR (plan IS NULL AND plan_ref_id = plan_id AND plan_ref_version = plan_version));

ALTER TABLE triggers
    ALTER COLUMN plan DROP NOT NULL,
    ADD COLUMN plan_ref_id text,
    ADD COLUMN plan_ref_version text,
    ADD CONSTRAINT triggers_plan_or_ref CHECK (
        (plan IS NOT NULL AND plan_ref_id IS NULL AND plan_ref_version IS NULL)
        OR (plan IS NULL AND plan_ref_id = plan_id AND plan_ref_version = plan_version));
