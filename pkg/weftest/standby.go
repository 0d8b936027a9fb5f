package weftest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/boot/pgboot"
	"github.com/weftrun/weft/pkg/schema"
)

// NewStandbyDB starts a private Postgres primary with Weft's schema and a
// streaming hot standby of it (internal/boot/pgboot), for tests of what reads a
// standby. Both are stopped, and their pools closed, when t ends. Each
// DB's Name is "postgres". It takes a few seconds: two servers start and
// the standby copies the primary.
func NewStandbyDB(t testing.TB) (primary, standby *DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := pgboot.Start(ctx, pgboot.Config{})
	if err != nil {
		t.Fatalf("weftest: primary: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	primary = instanceDB(ctx, t, p)
	if _, err := schema.Migrate(ctx, primary.Pool); err != nil {
		t.Fatalf("weftest: migrate the primary: %v", err)
	}
	s, err := pgboot.StartStandby(ctx, p)
	if err != nil {
		t.Fatalf("weftest: standby: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return primary, instanceDB(ctx, t, s)
}

// instanceDB is a DB on inst's postgres database, its pool closed when t
// ends (before the instance stops: cleanups run last in, first out).
func instanceDB(ctx context.Context, t testing.TB, inst *pgboot.Instance) *DB {
	pool, err := pgxpool.New(ctx, inst.URL())
	if err != nil {
		t.Fatalf("weftest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return &DB{Pool: pool, URL: inst.URL(), Name: "postgres"}
}
