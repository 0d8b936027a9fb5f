package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// rowVersion is the persisted-format version every schedules row is
// written with (docs/persisted-format.md).
const rowVersion = 1

// MaxRecentSkips is how many skip records a schedule keeps, newest last.
const MaxRecentSkips = 50

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Key names a schedule.
type Key struct{ TenantID, ScheduleID string }

// record is a schedules row: the schedule, and the state only the
// scheduler reads.
type record struct {
	api.Schedule
	bufferedWindow *api.FireWindow
}

// columns are the columns scanRecord reads, in its order.
const columns = `tenant_id, schedule_id, project_id, environment_id, cron, timezone, plan_id, plan_version,
	plan, plan_ref_id, plan_ref_version, input, misfire_policy, max_catchup, overlap_policy, paused, next_fire_at, last_fire_at,
	last_run_id::text, buffered_for, buffered_window, skipped_misfire, skipped_overlap,
	skipped_catchup_limit, skipped_refused, recent_skips, created_at, updated_at, labels, priority`

// summaryColumns are columns with the plan and input left out, for lists.
const summaryColumns = `tenant_id, schedule_id, project_id, environment_id, cron, timezone, plan_id, plan_version,
	NULL::jsonb, plan_ref_id, plan_ref_version, NULL::jsonb, misfire_policy, max_catchup, overlap_policy, paused, next_fire_at, last_fire_at,
	last_run_id::text, buffered_for, buffered_window, skipped_misfire, skipped_overlap,
	skipped_catchup_limit, skipped_refused, recent_skips, created_at, updated_at, labels, priority`

func scanRecord(row pgx.Row) (*record, error) {
	var r record
	s := &r.Schedule
	var lastRun, refID, refVersion *string
	var window, skips []byte
	err := row.Scan(&s.TenantID, &s.ScheduleID, &s.ProjectID, &s.EnvironmentID, &s.Cron, &s.Timezone, &s.PlanID,
		&s.PlanVersion, &s.Plan, &refID, &refVersion, &s.Input, &s.MisfirePolicy, &s.MaxCatchup, &s.OverlapPolicy, &s.Paused,
		&s.NextFireAt, &s.LastFireAt, &lastRun, &s.BufferedFireAt, &window, &s.Skipped.Misfire,
		&s.Skipped.Overlap, &s.Skipped.CatchupLimit, &s.Skipped.Refused, &skips, &s.CreatedAt, &s.UpdatedAt, &s.Labels, &s.Priority)
	if err != nil {
		return nil, err
	}
	if lastRun != nil {
		s.LastRunID = *lastRun
	}
	if refID != nil && refVersion != nil {
		s.PlanRef = &api.PlanRef{PlanID: *refID, PlanVersion: *refVersion}
	}
	if err := json.Unmarshal(skips, &s.RecentSkips); err != nil {
		return nil, fmt.Errorf("schedule: decode recent_skips: %w", err)
	}
	if window != nil {
		r.bufferedWindow = new(api.FireWindow)
		if err := json.Unmarshal(window, r.bufferedWindow); err != nil {
			return nil, fmt.Errorf("schedule: decode buffered_window: %w", err)
		}
	}
	utcAll(s)
	return &r, nil
}

// utcAll gives the schedule's times in UTC, as the API answers them.
func utcAll(s *api.Schedule) {
	for _, p := range []*time.Time{s.NextFireAt, s.LastFireAt, s.BufferedFireAt, &s.CreatedAt, &s.UpdatedAt} {
		if p != nil {
			*p = p.UTC()
		}
	}
	for i := range s.RecentSkips {
		sk := &s.RecentSkips[i]
		sk.From, sk.To, sk.RecordedAt = sk.From.UTC(), sk.To.UTC(), sk.RecordedAt.UTC()
	}
}

// recordGet reads a schedule, locked until tx ends when lock is set; nil
// when there is none.
func recordGet(ctx context.Context, q querier, k Key, lock bool) (*record, error) {
	sql := `SELECT ` + columns + ` FROM schedules WHERE tenant_id = $1 AND schedule_id = $2`
	if lock {
		sql += ` FOR UPDATE`
	}
	r, err := scanRecord(q.QueryRow(ctx, sql, k.TenantID, k.ScheduleID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: read %s: %w", k.ScheduleID, err)
	}
	return r, nil
}

// recordInsertTx writes a new schedule and reports whether it did: false
// when the tenant already has one of that id.
func recordInsertTx(ctx context.Context, tx pgx.Tx, s api.Schedule) (bool, error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO schedules (tenant_id, schedule_id, version, project_id, environment_id, cron, timezone,
		    plan_id, plan_version, plan, plan_ref_id, plan_ref_version, input, misfire_policy, max_catchup,
		    overlap_policy, paused, next_fire_at, created_at, updated_at, labels, priority)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $19, $20, $21)
		ON CONFLICT (tenant_id, schedule_id) DO NOTHING`,
		s.TenantID, s.ScheduleID, rowVersion, s.ProjectID, s.EnvironmentID, s.Cron, s.Timezone, s.PlanID,
		s.PlanVersion, intake.NullJSON(s.Plan), intake.RefID(s.PlanRef), intake.RefVersion(s.PlanRef), intake.NullJSON(s.Input),
		s.MisfirePolicy, s.MaxCatchup, s.OverlapPolicy, s.Paused, s.NextFireAt, s.CreatedAt, intake.NullLabels(s.Labels), s.Priority)
	if err != nil {
		return false, fmt.Errorf("schedule: insert: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// sameDefinitionTx reports whether the stored schedule k has s's
// definition; plan, input and labels compare as JSON values, a planRef
// by its members.
func sameDefinitionTx(ctx context.Context, tx pgx.Tx, k Key, s api.Schedule) (bool, error) {
	var same bool
	err := tx.QueryRow(ctx, `
		SELECT project_id = $3 AND environment_id = $4 AND cron = $5 AND timezone = $6
		   AND plan IS NOT DISTINCT FROM $7::jsonb AND input IS NOT DISTINCT FROM $8::jsonb AND misfire_policy = $9
		   AND max_catchup = $10 AND overlap_policy = $11
		   AND plan_ref_id IS NOT DISTINCT FROM $12 AND plan_ref_version IS NOT DISTINCT FROM $13
		   AND labels IS NOT DISTINCT FROM $14::jsonb AND priority = $15
		FROM schedules WHERE tenant_id = $1 AND schedule_id = $2`,
		k.TenantID, k.ScheduleID, s.ProjectID, s.EnvironmentID, s.Cron, s.Timezone, intake.NullJSON(s.Plan), intake.NullJSON(s.Input),
		s.MisfirePolicy, s.MaxCatchup, s.OverlapPolicy, intake.RefID(s.PlanRef), intake.RefVersion(s.PlanRef),
		intake.NullLabels(s.Labels), s.Priority).Scan(&same)
	if err != nil {
		return false, fmt.Errorf("schedule: compare: %w", err)
	}
	return same, nil
}

// recordUpdateTx replaces the definition of the schedule s names, and its
// paused state and next fire time.
func recordUpdateTx(ctx context.Context, tx pgx.Tx, s api.Schedule) error {
	_, err := tx.Exec(ctx, `
		UPDATE schedules SET project_id = $3, environment_id = $4, cron = $5, timezone = $6, plan_id = $7,
		    plan_version = $8, plan = $9, input = $10, misfire_policy = $11, max_catchup = $12,
		    overlap_policy = $13, paused = $14, next_fire_at = $15, updated_at = $16, plan_ref_id = $17,
		    plan_ref_version = $18, labels = $19, priority = $20
		WHERE tenant_id = $1 AND schedule_id = $2`,
		s.TenantID, s.ScheduleID, s.ProjectID, s.EnvironmentID, s.Cron, s.Timezone, s.PlanID, s.PlanVersion,
		intake.NullJSON(s.Plan), intake.NullJSON(s.Input), s.MisfirePolicy, s.MaxCatchup, s.OverlapPolicy, s.Paused, s.NextFireAt,
		s.UpdatedAt, intake.RefID(s.PlanRef), intake.RefVersion(s.PlanRef), intake.NullLabels(s.Labels), s.Priority)
	if err != nil {
		return fmt.Errorf("schedule: update: %w", err)
	}
	return nil
}

// recordSetPaused pauses or resumes k and returns it; nil when there is
// no such schedule.
func recordSetPaused(ctx context.Context, q querier, k Key, paused bool, now time.Time) (*record, error) {
	r, err := scanRecord(q.QueryRow(ctx, `
		UPDATE schedules SET paused = $3, updated_at = CASE WHEN paused = $3 THEN updated_at ELSE $4 END
		WHERE tenant_id = $1 AND schedule_id = $2
		RETURNING `+columns, k.TenantID, k.ScheduleID, paused, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: set paused: %w", err)
	}
	return r, nil
}

// recordDelete removes k and reports whether it existed.
func recordDelete(ctx context.Context, q querier, k Key) (bool, error) {
	tag, err := q.Exec(ctx, `DELETE FROM schedules WHERE tenant_id = $1 AND schedule_id = $2`, k.TenantID, k.ScheduleID)
	if err != nil {
		return false, fmt.Errorf("schedule: delete: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// recordList returns up to limit schedules of tenant after the id after,
// in id order, without plans and inputs.
func recordList(ctx context.Context, q querier, tenant, after string, limit int) ([]api.Schedule, error) {
	rows, err := q.Query(ctx, `SELECT `+summaryColumns+` FROM schedules
		WHERE tenant_id = $1 AND schedule_id COLLATE "C" > $2 ORDER BY schedule_id COLLATE "C" LIMIT $3`,
		tenant, after, limit)
	if err != nil {
		return nil, fmt.Errorf("schedule: list: %w", err)
	}
	defer rows.Close()
	out := []api.Schedule{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("schedule: list: %w", err)
		}
		out = append(out, r.Schedule)
	}
	return out, rows.Err()
}
