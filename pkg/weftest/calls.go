package weftest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Calls counts the round trips a pool's connections make: each query sent
// on its own and each batch is one. Tests pin how many round trips a
// transaction costs with it, the figure that bounds a busy transaction on
// a small machine (internal/store/pipetx).
type Calls struct{ n atomic.Int64 }

// N returns the round trips counted so far.
func (c *Calls) N() int { return int(c.n.Load()) }

// TraceQueryStart counts a query sent on its own.
func (c *Calls) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceQueryEnd does nothing.
func (c *Calls) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a batch.
func (c *Calls) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceBatchQuery does nothing.
func (c *Calls) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing.
func (c *Calls) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// CountedPool returns a second pool on db whose connections count their
// round trips in the returned Calls; it is closed when the test ends.
func (db *DB) CountedPool(t testing.TB) (*pgxpool.Pool, *Calls) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := &Calls{}
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, c
}
