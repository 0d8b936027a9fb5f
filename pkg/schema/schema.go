// Package schema holds Weft's Postgres schema as numbered, embedded SQL
// migrations and applies them. `weft migrate` and `weft dev` call Migrate;
// the test harness calls it on every fresh test database.
package schema

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// migrateLockKey serialises concurrent Migrate calls on one database.
const migrateLockKey = 0x77656674 // "weft"

// Migrations returns the embedded migrations in version order. File names
// are NNNN_name.sql; a malformed name is a build defect and fails here.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("schema: read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("schema: migration %q is not named NNNN_name.sql", e.Name())
		}
		body, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("schema: read %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("schema: two migrations numbered %d", out[i].Version)
		}
	}
	return out, nil
}

// Migrate applies every migration not yet applied, each in its own
// transaction, and returns the versions it applied. Concurrent callers are
// serialised by an advisory lock, so two processes starting at once are safe.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	migrations, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("schema: acquire: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return nil, fmt.Errorf("schema: lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey) }()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS weft_schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("schema: create migrations table: %w", err)
	}
	if err := refuseNewer(ctx, conn.Conn(), migrations[len(migrations)-1]); err != nil {
		return nil, err
	}
	var applied []int
	for _, m := range migrations {
		done, err := apply(ctx, conn.Conn(), m)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, m.Version)
		}
	}
	return applied, nil
}

// ErrSchemaNewer reports a database migrated by a newer Weft than this
// binary: its code would misread the tables, so Migrate refuses it and
// changes nothing.
var ErrSchemaNewer = errors.New("schema: the database is newer than this binary")

// refuseNewer fails with ErrSchemaNewer when the database has a migration
// past last, the newest this binary knows.
func refuseNewer(ctx context.Context, conn *pgx.Conn, last Migration) error {
	var version int
	var name string
	err := conn.QueryRow(ctx, `SELECT version, name FROM weft_schema_migrations ORDER BY version DESC LIMIT 1`).Scan(&version, &name)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("schema: read the applied migrations: %w", err)
	case version > last.Version:
		return fmt.Errorf("%w: it has migration %04d_%s, and this binary knows migrations up to %04d_%s; "+
			"run a Weft at least as new as the one that migrated it (or restore a backup taken before)",
			ErrSchemaNewer, version, name, last.Version, last.Name)
	}
	return nil
}

func apply(ctx context.Context, conn *pgx.Conn, m Migration) (bool, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("schema: begin %d: %w", m.Version, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM weft_schema_migrations WHERE version = $1)",
		m.Version).Scan(&exists); err != nil {
		return false, fmt.Errorf("schema: check %d: %w", m.Version, err)
	}
	if exists {
		return false, nil
	}
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("schema: apply %04d_%s: %w", m.Version, m.Name, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO weft_schema_migrations (version, name) VALUES ($1, $2)",
		m.Version, m.Name); err != nil {
		return false, fmt.Errorf("schema: record %d: %w", m.Version, err)
	}
	return true, tx.Commit(ctx)
}
