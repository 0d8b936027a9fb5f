package bulk

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// Defaults of Config.
const (
	// DefaultRate is Config.Rate's default: runs acted on per second.
	DefaultRate = 500
	// DefaultMaxRuns is Config.MaxRuns's default.
	DefaultMaxRuns = 100_000
	// DefaultBatch is Config.Batch's default.
	DefaultBatch = 100
	// DefaultLease is Config.Lease's default.
	DefaultLease = 15 * time.Second
	// DefaultPollInterval is Config.PollInterval's default.
	DefaultPollInterval = 500 * time.Millisecond
	// DefaultConcurrency is Config.Concurrency's default.
	DefaultConcurrency = 32
	// DefaultRetention is Config.Retention's default.
	DefaultRetention = 7 * 24 * time.Hour
)

// Config tunes bulk jobs. The zero value of each field means its default.
type Config struct {
	// Rate bounds the runs one job acts on per second, so that a job of
	// many runs leaves the gateway and the engine to live traffic.
	Rate int
	// MaxRuns bounds the runs one job may match: a filter that matches
	// more is refused (InvalidArgument) at create; narrow it.
	MaxRuns int
	// Batch is how many runs a job acts on between two records of its
	// progress: what a crash can make a gateway act on again (answered as
	// duplicates).
	Batch int
	// Concurrency is how many of a batch's runs a job acts on at once.
	Concurrency int
	// Lease is how long a gateway holds a job it works on without
	// renewing it; another takes it over after.
	Lease time.Duration
	// PollInterval is how often an idle Runner looks for a job to take.
	PollInterval time.Duration
	// Retention is how long a job that ended is kept, with its runs'
	// list, for GET /v1/bulk/{id} and repeats of its bulkId
	// (ExpiredDelete); after it the bulkId is free again.
	Retention time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the runner's failures; nil means slog.Default.
	Logger *slog.Logger
	// BeforeRecord, if set, runs after a batch's actions and before its
	// progress is recorded. Crash tests end the runner there.
	BeforeRecord func()
}

func (c Config) withDefaults() Config {
	c.Rate = cmp.Or(max(c.Rate, 0), DefaultRate)
	c.MaxRuns = cmp.Or(max(c.MaxRuns, 0), DefaultMaxRuns)
	c.Batch = cmp.Or(max(c.Batch, 0), DefaultBatch)
	c.Lease = cmp.Or(max(c.Lease, 0), DefaultLease)
	c.Concurrency = cmp.Or(max(c.Concurrency, 0), DefaultConcurrency)
	c.PollInterval = cmp.Or(max(c.PollInterval, 0), DefaultPollInterval)
	c.Retention = cmp.Or(max(c.Retention, 0), DefaultRetention)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Service creates, reads and cancels bulk jobs, and runs them (Run).
// Safe for concurrent use.
type Service struct {
	pool   *pgxpool.Pool
	intake *intake.Intake
	authz  auth.Authorizer
	cfg    Config
}

// New returns the bulk jobs of pool, acting on runs through in, deciding
// what callers may do with authz.
func New(pool *pgxpool.Pool, in *intake.Intake, authz auth.Authorizer, cfg Config) *Service {
	return &Service{pool: pool, intake: in, authz: authz, cfg: cfg.withDefaults()}
}

// actions are the actions a job may take, and the role they need.
var actions = []string{api.BulkCancel, api.BulkPause, api.BulkResume, api.BulkRetryFailedSteps, api.BulkRerun}

// Create records the job req asks for in p's tenant, with the runs its
// filter matches now, and returns it: created false for a repeat of an
// earlier request under the same bulkId. It needs ActionRunSignal (an
// operator's) in the tenant; a bad field, or a filter matching more than
// MaxRuns runs, is InvalidArgument, a bulkId taken by another request
// IdempotencyConflict; nothing is written for a refusal.
func (s *Service) Create(ctx context.Context, p auth.Principal, req api.BulkRequest) (api.BulkJob, bool, error) {
	if err := checkRequest(req); err != nil {
		return api.BulkJob{}, false, err
	}
	if err := s.authorize(ctx, p, req.Action); err != nil {
		return api.BulkJob{}, false, err
	}
	filter, err := json.Marshal(req.Filter)
	if err != nil {
		return api.BulkJob{}, false, err
	}
	digest := sha256.Sum256(append([]byte(req.Action+"\n"), intake.CanonicalJSON(filter)...))
	var job api.BulkJob
	var created bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		job, created, err = s.createTx(ctx, tx, p, req, filter, digest[:])
		return err
	})
	return job, created, err
}

// createTx inserts the job and its runs in tx, or reads the job a repeat
// names.
func (s *Service) createTx(ctx context.Context, tx pgx.Tx, p auth.Principal, req api.BulkRequest, filter, digest []byte) (api.BulkJob, bool, error) {
	now := s.cfg.Now().UTC().Truncate(time.Microsecond)
	tag, err := tx.Exec(ctx, `INSERT INTO bulk_jobs (tenant_id, bulk_id, action, filter, request_digest, key_id, role, status,
		created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT DO NOTHING`,
		p.TenantID, req.BulkID, req.Action, filter, digest, p.KeyID, string(p.Role), api.BulkRunning, now)
	if err != nil {
		return api.BulkJob{}, false, fmt.Errorf("bulk: record job: %w", err)
	}
	if tag.RowsAffected() == 0 {
		job, stored, err := getTx(ctx, tx, p.TenantID, req.BulkID)
		if err == nil && !bytes.Equal(stored, digest) {
			err = &intake.Error{Code: api.CodeIdempotencyConflict, Details: map[string]any{"bulkId": req.BulkID},
				Message: fmt.Sprintf("bulk job %q was started before with another action or filter; send that request again to follow it, or use a bulkId of its own", req.BulkID)}
		}
		return job, false, err
	}
	where, args := matchSQL(p.TenantID, req.Filter, 4)
	tag, err = tx.Exec(ctx, `INSERT INTO bulk_job_runs (tenant_id, bulk_id, seq, run_id)
		SELECT $1, $2, row_number() OVER (ORDER BY created_at, run_id), run_id FROM (
		    SELECT created_at, run_id FROM run_snapshots WHERE `+where+` ORDER BY created_at, run_id LIMIT $3) m`,
		append([]any{p.TenantID, req.BulkID, s.cfg.MaxRuns + 1}, args...)...)
	if err != nil {
		return api.BulkJob{}, false, fmt.Errorf("bulk: match runs: %w", err)
	}
	if n := tag.RowsAffected(); n > int64(s.cfg.MaxRuns) {
		return api.BulkJob{}, false, &intake.Error{Code: api.CodeInvalidArgument,
			Details: map[string]any{"field": "filter", "limit": s.cfg.MaxRuns},
			Message: fmt.Sprintf("filter matches more than %d runs, the limit of one bulk job: narrow it (by status, plan, labels) or run several jobs", s.cfg.MaxRuns)}
	}
	if _, err := tx.Exec(ctx, `UPDATE bulk_jobs SET matched = (SELECT count(*) FROM bulk_job_runs WHERE tenant_id = $1 AND bulk_id = $2)
		WHERE tenant_id = $1 AND bulk_id = $2`, p.TenantID, req.BulkID); err != nil {
		return api.BulkJob{}, false, err
	}
	job, _, err := getTx(ctx, tx, p.TenantID, req.BulkID)
	return job, true, err
}

// Get returns p's tenant's job bulkID, or NotFound.
func (s *Service) Get(ctx context.Context, p auth.Principal, bulkID string) (api.BulkJob, error) {
	if d := s.authz.Authorize(ctx, p, auth.ActionRunRead, auth.Resource{TenantID: p.TenantID}); !d.Allowed {
		return api.BulkJob{}, intake.Denied(p, p.TenantID, d)
	}
	job, _, err := getTx(ctx, s.pool, p.TenantID, bulkID)
	return job, err
}

// Cancel stops p's tenant's job bulkID: no run is acted on after the
// batch in flight. Cancelling a job that ended changes nothing.
func (s *Service) Cancel(ctx context.Context, p auth.Principal, bulkID string) (api.BulkJob, error) {
	if err := s.authorize(ctx, p, api.BulkCancel); err != nil {
		return api.BulkJob{}, err
	}
	if _, err := s.pool.Exec(ctx, `UPDATE bulk_jobs SET status = $3, ended_at = $4, updated_at = $4
		WHERE tenant_id = $1 AND bulk_id = $2 AND status = $5`,
		p.TenantID, bulkID, api.BulkCancelled, s.cfg.Now().UTC(), api.BulkRunning); err != nil {
		return api.BulkJob{}, fmt.Errorf("bulk: cancel: %w", err)
	}
	return s.Get(ctx, p, bulkID)
}

// authorize asks whether p may send action's signals (or start reruns)
// in its tenant.
func (s *Service) authorize(ctx context.Context, p auth.Principal, action string) error {
	a := auth.ActionSignalSend
	if action == api.BulkRerun {
		a = auth.ActionRunStart
	}
	if d := s.authz.Authorize(ctx, p, a, auth.Resource{TenantID: p.TenantID}); !d.Allowed {
		return intake.Denied(p, p.TenantID, d)
	}
	return nil
}

// checkRequest refuses a request's bad fields, each as an
// InvalidArgument about it.
func checkRequest(req api.BulkRequest) error {
	switch {
	case req.BulkID == "":
		return intake.Invalid("bulkId", "is required: the job's id, which makes it idempotent")
	case plan.CheckID(req.BulkID, 64) != nil:
		return intake.Invalid("bulkId", "%v", plan.CheckID(req.BulkID, 64))
	case !slices.Contains(actions, req.Action):
		return intake.Invalid("action", "unknown action %q; want one of %v", req.Action, actions)
	}
	for i, st := range req.Filter.Status {
		if !events.RunStatus(st).Terminal() && !slices.Contains([]string{"APPROVED", "QUEUED", "RUNNING", "PAUSED"}, st) {
			return intake.Invalid(fmt.Sprintf("filter.status[%d]", i), "unknown status %q", st)
		}
	}
	if req.Filter.Parent != "" {
		if _, err := events.ParseRunID(req.Filter.Parent); err != nil {
			return intake.Invalid("filter.parent", "must be a run id (a canonical, lowercase UUID)")
		}
	}
	return nil
}

// ExpiredDelete removes the jobs that ended more than Retention ago, with
// their runs' lists, batch at a time, and returns how many. Safe to run
// from any number of gateways at once.
func (s *Service) ExpiredDelete(ctx context.Context, batch int) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM bulk_jobs WHERE (tenant_id, bulk_id) IN (
			SELECT tenant_id, bulk_id FROM bulk_jobs WHERE ended_at <= $1 LIMIT $2)`,
			s.cfg.Now().Add(-s.cfg.Retention), max(batch, 1))
		if err != nil {
			return total, fmt.Errorf("bulk: delete expired jobs: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(max(batch, 1)) {
			return total, nil
		}
	}
}
