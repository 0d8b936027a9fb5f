// Package pipetx runs a Postgres transaction whose BEGIN travels with its
// first statements and whose COMMIT travels with its last ones, so that
// neither costs a round trip of its own. A transaction that reads in one
// batch and writes in the next then costs two round trips, not four.
//
// Round trips, not statements, are what a busy transaction pays for on a
// small machine: each one is a pair of context switches between the
// client and its backend. The engine's rounds and the gateway's signals
// run on it.
package pipetx

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// KeyPlansSQL is a prelude for a transaction whose statements reach a few
// rows through an index, on tables whose statistics mislead the planner:
// it turns off sequential scans, hash joins and merge joins until the
// transaction ends, so the planner is left with index probes whatever the
// statistics say. Two kinds of table mislead it. One that grows from
// empty faster than autovacuum analyzes it gets plans, cached with the
// prepared statement, made while it was a few pages, which scan it once it
// has grown (the projector's snapshots). A queue whose rows come and go
// (the outbox) keeps the heap and indexes of the largest backlog it ever
// held, with a handful of live rows in them: the planner prices its
// indexes by their size and scans the whole heap instead.
const KeyPlansSQL = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true)`

// Tx is a transaction on one connection. Nothing is sent until its first
// statement; BEGIN and the prelude then go out ahead of that statement, in
// the same round trip. It implements pgx.Tx, so code written against a
// pgx.Tx runs in it unchanged, except that it cannot nest (Begin) and has
// no large objects. Not safe for concurrent use.
type Tx struct {
	conn    *pgx.Conn
	prelude []string
	begun   bool
	ended   bool
}

var _ pgx.Tx = (*Tx)(nil)

// ErrNested is Begin's error: a pipelined transaction has no savepoints.
var ErrNested = errors.New("pipetx: nested transactions are not supported")

// CommitError is the failure of the round trip that carried, or was to
// carry, a transaction's COMMIT (CommitBatch, Commit). After a lost
// connection a transaction that failed with a CommitError may have
// committed, unless pgconn.SafeToRetry says that nothing went out; one
// that failed with any other error did not. Its message is Err's.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *CommitError) Unwrap() error { return e.Err }

// New returns a transaction on conn, which must not be in a transaction.
// prelude are statements without arguments (SET LOCAL ...) that run right
// after BEGIN.
func New(conn *pgx.Conn, prelude ...string) *Tx {
	return &Tx{conn: conn, prelude: prelude}
}

// BeginFunc runs fn in a transaction on a connection from pool. fn ends
// the transaction itself, usually with CommitBatch; if it returns nil
// without doing so, the transaction commits. If fn returns an error, or
// panics, whatever was not committed is rolled back.
func BeginFunc(ctx context.Context, pool *pgxpool.Pool, prelude []string, fn func(*Tx) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pipetx: acquire: %w", err)
	}
	defer conn.Release()
	tx := New(conn.Conn(), prelude...)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil || tx.ended {
		return err
	}
	return tx.Commit(ctx)
}

// SendBatch sends b in the transaction in one round trip, with BEGIN and
// the prelude ahead of it if nothing was sent yet; their results are not
// among b's.
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.ended {
		return &failedResults{err: pgx.ErrTxClosed}
	}
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	full := &pgx.Batch{}
	full.Queue("begin")
	for _, sql := range t.prelude {
		full.Queue(sql)
	}
	skip := len(full.QueuedQueries)
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	return &skipResults{BatchResults: t.conn.SendBatch(ctx, full), skip: skip}
}

// CommitBatch sends b and COMMIT in one round trip and reads every result,
// running b's callbacks. The transaction commits if every statement of b
// succeeded; otherwise it is rolled back and the first error is returned,
// as a *CommitError. A COMMIT that Postgres answers with ROLLBACK (the
// transaction had failed before) is pgx.ErrTxCommitRollback.
func (t *Tx) CommitBatch(ctx context.Context, b *pgx.Batch) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	if !t.begun && len(b.QueuedQueries) == 0 {
		t.ended = true // nothing was ever sent: nothing to commit
		return nil
	}
	b.Queue("commit").Exec(func(tag pgconn.CommandTag) error {
		if tag.String() != "COMMIT" { // Postgres answers a COMMIT of a failed transaction with ROLLBACK
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	err := t.SendBatch(ctx, b).Close()
	if err != nil {
		_ = t.Rollback(context.WithoutCancel(ctx))
		return &CommitError{Err: err}
	}
	t.ended = true
	return nil
}

// Commit commits what was sent; a transaction that sent nothing has
// nothing to commit.
func (t *Tx) Commit(ctx context.Context) error {
	return t.CommitBatch(ctx, &pgx.Batch{})
}

// Rollback rolls back whatever was not committed. It is safe to call
// after a commit, and more than once. Should it fail, the connection is
// left in its transaction and a pool discards it on release.
func (t *Tx) Rollback(ctx context.Context) error {
	t.ended = true
	if !t.begun || t.conn.IsClosed() || t.conn.PgConn().TxStatus() == 'I' {
		return nil
	}
	_, err := t.conn.Exec(ctx, "rollback")
	return err
}

// begin sends BEGIN and the prelude, in one round trip, unless they went
// out already.
func (t *Tx) begin(ctx context.Context) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	if t.begun {
		return nil
	}
	t.begun = true
	_, err := t.conn.Exec(ctx, strings.Join(append([]string{"begin"}, t.prelude...), "; "))
	return err
}

// Exec runs one statement in the transaction.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.conn.Exec(ctx, sql, args...)
}

// Query runs one query in the transaction.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.conn.Query(ctx, sql, args...)
}

// QueryRow runs one query in the transaction and returns its first row.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.begin(ctx); err != nil {
		return errRow{err}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

// CopyFrom copies rows into a table in the transaction.
func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

// Prepare prepares a statement on the transaction's connection.
func (t *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

// Begin fails with ErrNested.
func (t *Tx) Begin(context.Context) (pgx.Tx, error) { return nil, ErrNested }

// LargeObjects is not supported: the value it returns must not be used.
func (t *Tx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Conn returns the transaction's connection.
func (t *Tx) Conn() *pgx.Conn { return t.conn }

// skipResults hides the results of BEGIN and the prelude, which lead the
// batch, from its sender.
type skipResults struct {
	pgx.BatchResults
	skip int
}

// skipped reads the leading results; the first error among them is every
// later read's error.
func (r *skipResults) skipped() error {
	for ; r.skip > 0; r.skip-- {
		if _, err := r.BatchResults.Exec(); err != nil {
			r.skip = 0
			r.BatchResults = &failedResults{err: err, rest: r.BatchResults}
			return err
		}
	}
	return nil
}

func (r *skipResults) Exec() (pgconn.CommandTag, error) {
	if err := r.skipped(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return r.BatchResults.Exec()
}

func (r *skipResults) Query() (pgx.Rows, error) {
	if err := r.skipped(); err != nil {
		return nil, err
	}
	return r.BatchResults.Query()
}

func (r *skipResults) QueryRow() pgx.Row {
	if err := r.skipped(); err != nil {
		return errRow{err}
	}
	return r.BatchResults.QueryRow()
}

func (r *skipResults) Close() error {
	if err := r.skipped(); err != nil {
		return err
	}
	return r.BatchResults.Close()
}

// failedResults answers every read with err; rest, if set, is closed with
// it.
type failedResults struct {
	err  error
	rest pgx.BatchResults
}

func (r *failedResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, r.err }
func (r *failedResults) Query() (pgx.Rows, error)         { return nil, r.err }
func (r *failedResults) QueryRow() pgx.Row                { return errRow{r.err} }
func (r *failedResults) Tx() pgx.Tx                       { return nil }
func (r *failedResults) Close() error {
	if r.rest != nil {
		_ = r.rest.Close()
		r.rest = nil
	}
	return r.err
}

// errRow is a row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
