package partition

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Members is the engines' membership table (engine_members), seen from
// one engine.
type Members struct {
	pool  *pgxpool.Pool
	self  string
	lease time.Duration
}

// NewMembers returns self's view of the membership: a member is an engine
// whose last heartbeat is younger than lease.
func NewMembers(pool *pgxpool.Pool, self string, lease time.Duration) *Members {
	return &Members{pool: pool, self: self, lease: lease}
}

// Self is this engine's id.
func (m *Members) Self() string { return m.self }

// heartbeatSQL records self's heartbeat, forgets the engines silent for
// ten leases, and returns the other members, in one statement. Its
// snapshot is taken before the upsert, so self is added by the caller.
const heartbeatSQL = `
	WITH beat AS (
		INSERT INTO engine_members (engine_id) VALUES ($1)
		ON CONFLICT (engine_id) DO UPDATE SET heartbeat_at = now()
	), gone AS (
		DELETE FROM engine_members WHERE heartbeat_at < now() - 10 * $2::interval
	)
	SELECT engine_id FROM engine_members
	WHERE heartbeat_at >= now() - $2::interval AND engine_id <> $1`

// Heartbeat records that self is alive and returns the members, self
// among them.
func (m *Members) Heartbeat(ctx context.Context) ([]string, error) {
	rows, err := m.pool.Query(ctx, heartbeatSQL, m.self, m.lease)
	if err != nil {
		return nil, fmt.Errorf("partition: heartbeat: %w", err)
	}
	others, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("partition: heartbeat: %w", err)
	}
	return append(others, m.self), nil
}

// Leave deletes self's row, so the others divide the partitions without
// waiting for its lease to run out.
func (m *Members) Leave(ctx context.Context) error {
	if _, err := m.pool.Exec(ctx, `DELETE FROM engine_members WHERE engine_id = $1`, m.self); err != nil {
		return fmt.Errorf("partition: leave: %w", err)
	}
	return nil
}
