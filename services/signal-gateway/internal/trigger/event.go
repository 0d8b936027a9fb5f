package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// Event is an event sent to a trigger.
type Event struct {
	// ID is the event's stable id. Nil means the sender gave none: the
	// gateway assigns a fresh UUIDv7 and returns it. A non-nil empty ID is
	// refused.
	ID      *string
	Payload json.RawMessage
}

// Send starts a run of trigger id's plan for ev, on behalf of p, or
// answers the run an earlier delivery of the same event id started, with
// Duplicate set, and starts nothing. The run request id is
// "{triggerId}:{eventId}" and its input the event's payload, or the value
// of the trigger's input expression over the event (an
// api.TriggerInputEvent), evaluated before the run request is looked up.
// created says whether a run was started. Refusals are *intake.Error:
// NotFound for an unknown trigger, an InvalidArgument about the payload
// (details code CodeExpressionError) when the input expression fails on
// the event, the start's own refusals otherwise; a refused event starts
// nothing. A trigger by planRef resolves it for each event: an event whose
// version is archived is refused with CodePlanArchived, and one to a
// trigger that follows "latest" starts the newest version not archived.
// A redelivery is told by its eventId alone (repeatOf): after a new
// version was pushed it answers the first delivery's run.
func (s *Service) Send(ctx context.Context, p auth.Principal, id string, ev Event) (res api.TriggerEventResult, created bool, err error) {
	if err := intake.CheckResourceID("triggerId", id, api.MaxTriggerIDBytes); err != nil {
		return res, false, err
	}
	eventID := events.NewRunID()
	if ev.ID != nil {
		if *ev.ID == "" {
			return res, false, intake.Invalid("eventId", "must not be empty; leave it out to have one assigned")
		}
		eventID = *ev.ID
	}
	if err := checkEventID(eventID); err != nil {
		return res, false, err
	}
	if n := len(ev.Payload); n > s.cfg.MaxPayloadBytes {
		return res, false, &intake.Error{Code: api.CodePayloadTooLarge,
			Message: fmt.Sprintf("payload is %d bytes, more than the limit of %d", n, s.cfg.MaxPayloadBytes),
			Details: map[string]any{"field": "payload", "limit": s.cfg.MaxPayloadBytes}}
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tr, err := triggerGet(ctx, tx, p.TenantID, id, true)
		if err != nil || tr == nil {
			return cmpErr(err, notFound(id))
		}
		input, err := runInput(tr, eventID, ev.Payload)
		if err != nil {
			return err
		}
		start := startRequest(*tr)
		start.RunRequestID, start.Input = id+":"+eventID, input
		if start, err = intake.ResolvePlan(ctx, s.plans, p, start); err != nil {
			return err
		}
		run, err := s.intake.RunStartTx(ctx, tx, p, start, repeatOf(tr))
		res = api.TriggerEventResult{TriggerID: id, EventID: eventID, StartRunResult: run.StartRunResult}
		created = run.Created
		return err
	})
	if err != nil {
		err = eventConflict(err, id, eventID)
		s.recordRefusal(ctx, p.TenantID, id, eventID, err)
		return api.TriggerEventResult{}, false, err
	}
	return res, created, nil
}

// refusedCodes are the refusals of an event a trigger records: those of
// the event itself, once the trigger was found, and not those a retry
// may get past (a rate, an overload, a lost connection).
var refusedCodes = []string{api.CodeInvalidArgument, api.CodePlanArchived, api.CodeIdempotencyConflict, api.CodePayloadTooLarge}

// recordRefusal records, with trigger id of tenant, that it refused event
// eventID with err, when err is such a refusal (refusedCodes) of a
// trigger that exists. A failure to record is logged: the caller gets
// the refusal either way.
func (s *Service) recordRefusal(ctx context.Context, tenant, id, eventID string, err error) {
	var ie *intake.Error
	if !errors.As(err, &ie) || !slices.Contains(refusedCodes, ie.Code) {
		return
	}
	entry, merr := json.Marshal([]api.RefusedEvent{{EventID: eventID, Code: ie.Code, Message: ie.Message, At: s.cfg.Now().UTC().Truncate(time.Microsecond)}})
	if merr != nil {
		return
	}
	_, uerr := s.pool.Exec(context.WithoutCancel(ctx), `UPDATE triggers SET refused_events = refused_events + 1,
		recent_refusals = (SELECT coalesce(jsonb_agg(e ORDER BY n), '[]') FROM (
		    SELECT e, n FROM jsonb_array_elements($3::jsonb || recent_refusals) WITH ORDINALITY AS r(e, n) WHERE n <= $4) x)
		WHERE tenant_id = $1 AND trigger_id = $2`, tenant, id, string(entry), api.MaxTriggerRefusals)
	if uerr != nil {
		slog.Default().WarnContext(ctx, "trigger: record a refused event", "trigger_id", id, "event_id", eventID, "err", uerr)
	}
}

// repeatOf is how the start of an event to tr tells a redelivery, which
// must answer the first delivery's run: by its run request id alone
// (intake.RepeatOfRequestID) when tr follows "latest", whose deliveries
// of one event may resolve to different versions; by its run-request
// tuple otherwise (intake.RepeatMustMatch), whose version, the one tr
// names, is the same for every delivery. Either way a redelivery whose
// payload gives the run another input is refused with
// CodeIdempotencyConflict.
func repeatOf(tr *api.Trigger) intake.Repeat {
	if tr.PlanRef != nil && tr.PlanRef.PlanVersion == api.PlanVersionLatest {
		return intake.RepeatOfRequestID
	}
	return intake.RepeatMustMatch
}

// eventConflict words the start's IdempotencyConflict as the trigger's
// caller knows it: event eventID was sent before with another payload (or
// to the trigger as it was then). Any other err is returned as it is.
func eventConflict(err error, triggerID, eventID string) error {
	var ie *intake.Error
	if !errors.As(err, &ie) || ie.Code != api.CodeIdempotencyConflict {
		return err
	}
	runID, _ := ie.Details["runId"].(string)
	return &intake.Error{Code: api.CodeIdempotencyConflict,
		Message: fmt.Sprintf("event %q was sent to trigger %q before with another payload (run %s): "+
			"send it again with that payload to get its run, or this one under an eventId of its own", eventID, triggerID, runID),
		Details: map[string]any{"runId": runID, "triggerId": triggerID, "eventId": eventID, "runRequestId": ie.Details["runRequestId"]}}
}

// triggerColumns are the columns scanTrigger reads; the plan is NULL
// unless withPlan.
func triggerColumns(withPlan bool) string {
	plan := "NULL::jsonb"
	if withPlan {
		plan = "plan"
	}
	return `trigger_id, tenant_id, project_id, environment_id, plan_id, plan_version, ` + plan +
		`, plan_ref_id, plan_ref_version, coalesce(input_expr, ''), created_at, labels, refused_events, recent_refusals, priority`
}

func scanTrigger(row pgx.Row) (api.Trigger, error) {
	var tr api.Trigger
	var refID, refVersion *string
	err := row.Scan(&tr.TriggerID, &tr.TenantID, &tr.ProjectID, &tr.EnvironmentID, &tr.PlanID, &tr.PlanVersion,
		&tr.Plan, &refID, &refVersion, &tr.Input, &tr.CreatedAt, &tr.Labels, &tr.RefusedEvents, &tr.RecentRefusals, &tr.Priority)
	tr.CreatedAt = tr.CreatedAt.UTC()
	if refID != nil && refVersion != nil {
		tr.PlanRef = &api.PlanRef{PlanID: *refID, PlanVersion: *refVersion}
	}
	return tr, err
}

// triggerGet reads a trigger, nil when there is none. In a transaction
// the row is held FOR SHARE, so a delete waits for the event it serves.
func triggerGet(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenant, id string, withPlan bool) (*api.Trigger, error) {
	sql := `SELECT ` + triggerColumns(withPlan) + ` FROM triggers WHERE tenant_id = $1 AND trigger_id = $2`
	if _, inTx := q.(pgx.Tx); inTx {
		sql += ` FOR SHARE`
	}
	tr, err := scanTrigger(q.QueryRow(ctx, sql, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trigger: read %s: %w", id, err)
	}
	return &tr, nil
}
