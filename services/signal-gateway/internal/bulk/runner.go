package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"golang.org/x/time/rate"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/periodic"
)

// Run works on bulk jobs until ctx ends: it takes a RUNNING job whose
// lease has run out (or was never taken), works through its runs, then
// looks for the next one, every PollInterval when there is none. Any
// number of gateways may run it: the lease keeps them off each other's
// jobs.
func (s *Service) Run(ctx context.Context) {
	loop := periodic.Loop{Interval: s.cfg.PollInterval, Immediate: true, Logger: s.cfg.Logger, Failed: "bulk job poll failed"}
	loop.Run(ctx, func(ctx context.Context) error {
		for {
			k, token, err := s.claim(ctx)
			if err != nil || k == nil {
				return err
			}
			if err := s.work(ctx, *k, token); err != nil {
				return fmt.Errorf("bulk job %s: %w", k, err)
			}
		}
	})
}

// claim leases a job to work on to a fresh token, nil when none is due.
func (s *Service) claim(ctx context.Context) (*jobKey, string, error) {
	now := s.cfg.Now()
	token := events.NewRunID()
	var k jobKey
	err := s.pool.QueryRow(ctx, `UPDATE bulk_jobs SET claim_token = $1, claimed_until = $2
		WHERE (tenant_id, bulk_id) = (SELECT tenant_id, bulk_id FROM bulk_jobs
		    WHERE status = 'RUNNING' AND (claimed_until IS NULL OR claimed_until <= $3)
		    ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING tenant_id, bulk_id`, token, now.Add(s.cfg.Lease), now).Scan(&k.tenant, &k.bulkID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("bulk: claim: %w", err)
	}
	return &k, token, nil
}

// jobRun is one run of a job's batch, as its snapshot says now.
type jobRun struct {
	seq    int64
	runID  string
	status events.RunStatus
	failed []string // its FAILED steps but forEach elements, in snapshot order
	// acted reports that the job's signal to the run was accepted before
	// (a batch redone after a crash).
	acted bool
}

// work acts on job k's runs, a batch at a time, at most Rate a second,
// while token holds its lease and it is RUNNING.
func (s *Service) work(ctx context.Context, k jobKey, token string) error {
	job, _, err := getTx(ctx, s.pool, k.tenant, k.bulkID)
	if err != nil {
		return err
	}
	p, err := s.principal(ctx, k)
	if err != nil {
		return err
	}
	limit := rate.NewLimiter(rate.Limit(s.cfg.Rate), s.cfg.Batch)
	for {
		batch, err := s.nextBatch(ctx, k, job.Action)
		if err != nil {
			return err
		}
		if err := limit.WaitN(ctx, max(len(batch), 1)); err != nil {
			return err
		}
		pr := s.actAll(ctx, p, job, batch)
		if len(batch) == 0 {
			pr.last = cursorOf(ctx, s, k)
		}
		if s.cfg.BeforeRecord != nil {
			s.cfg.BeforeRecord()
		}
		status, err := record(ctx, s.pool, k, token, pr, len(batch) < s.cfg.Batch, s.cfg.Now().UTC(), s.cfg.Lease)
		if err != nil || status != api.BulkRunning {
			return err
		}
	}
}

// actAll acts on every run of batch, Concurrency at a time (the intake
// groups signals sent together into shared transactions), and returns
// what came of them, its cursor at the batch's last run.
func (s *Service) actAll(ctx context.Context, p auth.Principal, job api.BulkJob, batch []jobRun) progress {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		pr  progress
		sem = make(chan struct{}, s.cfg.Concurrency)
	)
	for _, r := range batch {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var one progress
			s.act(ctx, p, job, r, &one)
			mu.Lock()
			pr.add(one)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(batch) > 0 {
		pr.last = batch[len(batch)-1].seq
	}
	return pr
}

// cursorOf is job k's cursor, for a batch that found no run.
func cursorOf(ctx context.Context, s *Service, k jobKey) int64 {
	var seq int64
	_ = s.pool.QueryRow(ctx, `SELECT cursor_seq FROM bulk_jobs WHERE tenant_id = $1 AND bulk_id = $2`, k.tenant, k.bulkID).Scan(&seq)
	return seq
}

// principal is the caller that created job k, as the job acts.
func (s *Service) principal(ctx context.Context, k jobKey) (auth.Principal, error) {
	p := auth.Principal{TenantID: k.tenant}
	var role string
	err := s.pool.QueryRow(ctx, `SELECT key_id, role FROM bulk_jobs WHERE tenant_id = $1 AND bulk_id = $2`,
		k.tenant, k.bulkID).Scan(&p.KeyID, &role)
	p.Role = auth.Role(role)
	return p, err
}

// nextBatch returns the next Batch runs of job k after its cursor, each
// with its state now and whether the job's signal to it was accepted
// before.
func (s *Service) nextBatch(ctx context.Context, k jobKey, action string) ([]jobRun, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.seq, r.run_id::text, coalesce(rs.status, ''),
		    coalesce((SELECT array_agg(st->>'stepId') FROM jsonb_array_elements(rs.snapshot->'steps') st
		              WHERE st->>'status' = 'FAILED' AND st->>'stepId' NOT LIKE '%]'), '{}'),
		    EXISTS (SELECT 1 FROM signal_acceptances a WHERE a.run_id = r.run_id AND a.signal_name = $5
		            AND (a.signal_id = $4 OR a.signal_id LIKE $4 || '-%'))
		FROM bulk_job_runs r JOIN bulk_jobs j USING (tenant_id, bulk_id)
		LEFT JOIN run_snapshots rs ON rs.run_id = r.run_id
		WHERE r.tenant_id = $1 AND r.bulk_id = $2 AND r.seq > j.cursor_seq ORDER BY r.seq LIMIT $3`,
		k.tenant, k.bulkID, s.cfg.Batch, signalID(k.bulkID), signalName(action))
	if err != nil {
		return nil, fmt.Errorf("bulk: next batch: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (jobRun, error) {
		var r jobRun
		var status string
		err := row.Scan(&r.seq, &r.runID, &status, &r.failed, &r.acted)
		r.status = events.RunStatus(status)
		return r, err
	})
}

// signalID is the signalId of job bulkID's signals: "bulk-<bulkId>",
// with "-<stepId>" for each RETRY_STEP.
func signalID(bulkID string) string { return "bulk-" + bulkID }

// signalName is the signal action sends.
func signalName(action string) string {
	if action == api.BulkRetryFailedSteps {
		return "RETRY_STEP"
	}
	return action
}

// payloadOf is the payload of a RETRY_STEP of step.
func payloadOf(step string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"stepId": step})
	return b
}
