// Package trigger keeps the gateway's event triggers and starts their
// runs (docs/schedules.md, "Event triggers"). A trigger maps events to
// runs of its plan: the run request id of an event is
// "{triggerId}:{eventId}", so the gateway's run-request uniqueness makes a
// redelivered event answer the first delivery's run and start nothing, for
// as long as the run-request record is kept (the gateway's
// RunRequestRetention), whatever version a trigger that follows "latest"
// resolves the redelivery to (repeatOf). The run's input is the event's payload, or the
// value of the trigger's input expression over the event (input.go).
package trigger

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/page"
)

// Defaults applied to a zero Config field.
const (
	DefaultMaxPayloadBytes = 64 << 10
	DefaultMaxPerTenant    = 1000
)

// rowVersion is the persisted-format version of a triggers row.
const rowVersion = 1

// Config tunes triggers. The zero value of each field means its default.
type Config struct {
	// MaxPayloadBytes bounds an event's payload (its JSON text). The
	// run's input (the payload, or the trigger's input expression's value)
	// must also fit the gateway's limit of run inputs.
	MaxPayloadBytes int
	// MaxPerTenant is the quota of triggers one tenant may have: a create
	// past it is refused with CodeQuotaExceeded and writes nothing;
	// deleting one makes room. Creates of one tenant are counted under a
	// transaction-scoped advisory lock, so concurrent creates, from any
	// number of gateways, never pass it together.
	MaxPerTenant int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Service keeps triggers and takes their events in. Safe for concurrent
// use.
type Service struct {
	pool   *pgxpool.Pool
	intake *intake.Intake
	plans  intake.PlanResolver // nil: a trigger by planRef is refused
	authz  auth.Authorizer
	cfg    Config
}

// New returns the triggers of pool, starting runs through in and
// resolving the planRefs of triggers with plans (nil refuses every
// planRef).
func New(pool *pgxpool.Pool, in *intake.Intake, plans intake.PlanResolver, authz auth.Authorizer, cfg Config) (*Service, error) {
	cfg.MaxPayloadBytes = cmp.Or(cfg.MaxPayloadBytes, DefaultMaxPayloadBytes)
	cfg.MaxPerTenant = cmp.Or(cfg.MaxPerTenant, DefaultMaxPerTenant)
	if cfg.MaxPayloadBytes < 0 || cfg.MaxPerTenant < 0 {
		return nil, errors.New("trigger: MaxPayloadBytes and MaxPerTenant must not be negative")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{pool: pool, intake: in, plans: plans, authz: authz, cfg: cfg}, nil
}

// Create stores a new trigger for p, or refuses req with an
// *intake.Error before anything is stored. An empty TriggerID is given a
// fresh UUIDv7. A create that repeats an existing triggerId with the same
// definition answers that trigger with created false; with another it is
// refused with CodeAlreadyExists. A new trigger past the tenant's quota
// (Config.MaxPerTenant) is refused with CodeQuotaExceeded and nothing is
// stored.
func (s *Service) Create(ctx context.Context, p auth.Principal, req api.TriggerRequest) (tr api.Trigger, created bool, err error) {
	req.TriggerID = cmp.Or(req.TriggerID, events.NewRunID())
	if err := s.check(ctx, p, &req); err != nil {
		return api.Trigger{}, false, err
	}
	id, version := planOf(req)
	now := s.cfg.Now().UTC().Truncate(time.Microsecond)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.quota().LockTx(ctx, tx, req.TenantID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO triggers (tenant_id, trigger_id, version, project_id, environment_id, plan_id, plan_version, plan,
			                      plan_ref_id, plan_ref_version, input_expr, created_at, labels, priority)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULLIF($11, ''), $12, $13, $14)
			ON CONFLICT (tenant_id, trigger_id) DO NOTHING`,
			req.TenantID, req.TriggerID, rowVersion, req.ProjectID, req.EnvironmentID, id, version, intake.NullJSON(req.Plan),
			intake.RefID(req.PlanRef), intake.RefVersion(req.PlanRef), req.Input, now, intake.NullLabels(req.Labels), req.Priority)
		if err != nil {
			return fmt.Errorf("trigger: insert: %w", err)
		}
		created = tag.RowsAffected() == 1
		if created {
			err = s.quota().CheckTx(ctx, tx, req.TenantID)
		} else {
			err = sameDefinitionTx(ctx, tx, req)
		}
		if err != nil {
			return err
		}
		got, err := triggerGet(ctx, tx, req.TenantID, req.TriggerID, true)
		if err == nil && got != nil {
			tr = *got
		}
		return err
	})
	if err != nil {
		return api.Trigger{}, false, err
	}
	return tr, created, nil
}

// check refuses what can be refused before touching the database, but
// for reading the registered version a planRef names. Every field is checked before a refusal, which names all those at fault
// (intake.Join).
func (s *Service) check(ctx context.Context, p auth.Principal, req *api.TriggerRequest) error {
	if req.PlanRef != nil && bytes.Equal(bytes.TrimSpace(req.Plan), []byte("null")) {
		req.Plan = nil // a null plan is no plan
	}
	var inputErr error
	if req.Input != "" {
		_, inputErr = compileInput(req.Input)
	}
	err := intake.Join(intake.CheckResourceID("triggerId", req.TriggerID, api.MaxTriggerIDBytes), inputErr, s.checkRun(ctx, p, req))
	if err != nil {
		return err
	}
	return s.authorize(ctx, p, auth.ActionRunStart, req.TenantID)
}

// checkRun checks the run each event starts, as the gateway would check
// its start. A trigger by planRef is checked with the plan its ref
// resolves to now, so that a ref naming no version is refused at once.
func (s *Service) checkRun(ctx context.Context, p auth.Principal, req *api.TriggerRequest) error {
	id, version := planOf(*req)
	start, err := intake.ResolvePlan(ctx, s.plans, p, startRequest(api.Trigger{TenantID: req.TenantID, ProjectID: req.ProjectID,
		EnvironmentID: req.EnvironmentID, PlanID: id, PlanVersion: version, Plan: req.Plan, PlanRef: req.PlanRef,
		Labels: req.Labels, Priority: req.Priority}))
	if err != nil {
		return err
	}
	return s.intake.CheckStart(start)
}

// planOf is the planId and planVersion req names: its planRef's, or its
// plan's own.
func planOf(req api.TriggerRequest) (id, version string) {
	if req.PlanRef != nil {
		return req.PlanRef.PlanID, req.PlanRef.PlanVersion
	}
	return intake.PlanRef(req.Plan)
}

// startRequest is the start of a run of tr, with its labels and without a run request id or
// input. A trigger by planRef starts with its ref and no planId or
// planVersion, which resolve sets to the resolved version's.
func startRequest(tr api.Trigger) api.StartRunRequest {
	start := api.StartRunRequest{TenantID: tr.TenantID, ProjectID: tr.ProjectID, EnvironmentID: tr.EnvironmentID,
		Plan: tr.Plan, PlanRef: tr.PlanRef, Labels: tr.Labels, Priority: tr.Priority}
	if tr.PlanRef == nil {
		start.PlanID, start.PlanVersion = tr.PlanID, tr.PlanVersion
	}
	return start
}

// sameDefinitionTx refuses with CodeAlreadyExists unless the stored
// trigger has req's definition.
func sameDefinitionTx(ctx context.Context, tx pgx.Tx, req api.TriggerRequest) error {
	var same bool
	err := tx.QueryRow(ctx, `SELECT project_id = $3 AND environment_id = $4 AND plan IS NOT DISTINCT FROM $5::jsonb
			AND input_expr IS NOT DISTINCT FROM NULLIF($6, '')
			AND plan_ref_id IS NOT DISTINCT FROM $7 AND plan_ref_version IS NOT DISTINCT FROM $8
			AND labels IS NOT DISTINCT FROM $9::jsonb AND priority = $10
		FROM triggers WHERE tenant_id = $1 AND trigger_id = $2`,
		req.TenantID, req.TriggerID, req.ProjectID, req.EnvironmentID, intake.NullJSON(req.Plan), req.Input,
		intake.RefID(req.PlanRef), intake.RefVersion(req.PlanRef), intake.NullLabels(req.Labels), req.Priority).Scan(&same)
	if err != nil {
		return fmt.Errorf("trigger: compare: %w", err)
	}
	if !same {
		return &intake.Error{Code: api.CodeAlreadyExists, Details: map[string]any{"triggerId": req.TriggerID},
			Message: fmt.Sprintf("trigger %s exists with another definition: delete it first", req.TriggerID)}
	}
	return nil
}

// Get returns p's trigger id, or NotFound.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (api.Trigger, error) {
	if err := s.authorize(ctx, p, auth.ActionRunRead, p.TenantID); err != nil {
		return api.Trigger{}, err
	}
	tr, err := triggerGet(ctx, s.pool, p.TenantID, id, true)
	if err != nil || tr == nil {
		return api.Trigger{}, cmpErr(err, notFound(id))
	}
	return *tr, nil
}

// List returns a page of p's tenant's triggers in triggerId order,
// without their plans (see page.Args for cursor and limit).
func (s *Service) List(ctx context.Context, p auth.Principal, cursor string, limit int) (api.TriggerList, error) {
	if err := s.authorize(ctx, p, auth.ActionRunRead, p.TenantID); err != nil {
		return api.TriggerList{}, err
	}
	after, limit, err := page.Args(cursor, limit)
	if err != nil {
		return api.TriggerList{}, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+triggerColumns(false)+` FROM triggers
		WHERE tenant_id = $1 AND trigger_id COLLATE "C" > $2 ORDER BY trigger_id COLLATE "C" LIMIT $3`,
		p.TenantID, after, limit+1)
	if err != nil {
		return api.TriggerList{}, fmt.Errorf("trigger: list: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (api.Trigger, error) { return scanTrigger(r) })
	if err != nil {
		return api.TriggerList{}, fmt.Errorf("trigger: list: %w", err)
	}
	out := api.TriggerList{Triggers: list}
	if len(list) > limit {
		out.Triggers = list[:limit]
		out.NextCursor = page.Cursor(list[limit-1].TriggerID)
	}
	if out.Triggers == nil {
		out.Triggers = []api.Trigger{}
	}
	return out, nil
}

// Delete removes p's trigger id, or answers NotFound. Later events to it
// are answered NotFound; the runs it started go on.
func (s *Service) Delete(ctx context.Context, p auth.Principal, id string) error {
	if err := s.authorize(ctx, p, auth.ActionRunStart, p.TenantID); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM triggers WHERE tenant_id = $1 AND trigger_id = $2`, p.TenantID, id)
	if err != nil {
		return fmt.Errorf("trigger: delete: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(id)
	}
	return nil
}

// authorize asks authz whether p may do a in tenant.
func (s *Service) authorize(ctx context.Context, p auth.Principal, a auth.Action, tenant string) error {
	if d := s.authz.Authorize(ctx, p, a, auth.Resource{TenantID: tenant}); !d.Allowed {
		return intake.Denied(p, tenant, d)
	}
	return nil
}

// notFound answers a trigger that does not exist or belongs to another
// tenant; the two are indistinguishable.
func notFound(id string) *intake.Error {
	return &intake.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("trigger %s not found", id),
		Details: map[string]any{"triggerId": id}}
}

func cmpErr(err error, fallback *intake.Error) error {
	if err != nil {
		return err
	}
	return fallback
}

// checkEventID refuses an event id that cannot be part of a run request
// id.
func checkEventID(id string) error {
	if err := plan.CheckName(id, api.MaxEventIDBytes); err != nil {
		return intake.Invalid("eventId", "%v", err)
	}
	return nil
}

// quota is the tenant's quota of triggers (Config.MaxPerTenant).
func (s *Service) quota() intake.Quota {
	return intake.Quota{Table: "triggers", Limit: intake.LimitTriggerQuota, Max: s.cfg.MaxPerTenant}
}
