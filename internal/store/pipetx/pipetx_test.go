package pipetx_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// setup returns a pool whose connections count their calls, over a fresh
// database with a table t(k int primary key).
func setup(t *testing.T) (*pgxpool.Pool, *weftest.Calls) {
	t.Helper()
	db := weftest.NewDB(t)
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE t (k int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db.CountedPool(t)
}

func count(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A transaction that reads in one batch and writes in the next costs two
// calls: BEGIN and the prelude ride with the first, COMMIT with the last.
// The prelude runs inside the transaction and its results are not the
// sender's.
func TestReadThenWriteIsTwoCalls(t *testing.T) {
	pool, c := setup(t)
	before := c.N()
	err := pipetx.BeginFunc(t.Context(), pool, []string{"set local application_name = 'pipetx'"}, func(tx *pipetx.Tx) error {
		b := &pgx.Batch{}
		var name string
		b.Queue(`SELECT current_setting('application_name')`).QueryRow(func(r pgx.Row) error { return r.Scan(&name) })
		if err := tx.SendBatch(t.Context(), b).Close(); err != nil {
			return err
		}
		if name != "pipetx" {
			t.Errorf("prelude: application_name = %q", name)
		}
		w := &pgx.Batch{}
		w.Queue(`INSERT INTO t VALUES (1), (2)`)
		return tx.CommitBatch(t.Context(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.N() - before; got != 2 {
		t.Errorf("calls = %d, want 2", got)
	}
	if n := count(t, pool); n != 2 {
		t.Errorf("rows = %d, want 2", n)
	}
}

// Reading a batch's results one by one sees only the sender's statements.
func TestBatchResultsAreTheSenders(t *testing.T) {
	pool, _ := setup(t)
	err := pipetx.BeginFunc(t.Context(), pool, []string{"set local application_name = 'x'"}, func(tx *pipetx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT 41`)
		b.Queue(`SELECT 42`)
		br := tx.SendBatch(t.Context(), b)
		var x, y int
		if err := br.QueryRow().Scan(&x); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&y); err != nil {
			return err
		}
		if x != 41 || y != 42 {
			t.Errorf("results = %d, %d; want 41, 42", x, y)
		}
		return br.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A failing statement in the committing batch commits nothing, returns
// its error as a *CommitError, and leaves the connection out of any
// transaction.
func TestFailedCommitBatchWritesNothing(t *testing.T) {
	pool, _ := setup(t)
	var conn *pgx.Conn
	err := pipetx.BeginFunc(t.Context(), pool, nil, func(tx *pipetx.Tx) error {
		conn = tx.Conn()
		if _, err := tx.Exec(t.Context(), `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		w := &pgx.Batch{}
		w.Queue(`INSERT INTO t VALUES (2)`)
		w.Queue(`INSERT INTO t VALUES (1)`) // duplicate key
		err := tx.CommitBatch(t.Context(), w)
		if status := conn.PgConn().TxStatus(); status != 'I' {
			t.Errorf("after a failed commit, TxStatus = %c, want I", status)
		}
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("err = %v, want a unique violation", err)
	}
	if _, ok := errors.AsType[*pipetx.CommitError](err); !ok {
		t.Errorf("err = %v (%T), want a *pipetx.CommitError", err, err)
	}
	if n := count(t, pool); n != 0 {
		t.Errorf("rows = %d, want 0", n)
	}
}

// A batch that fails before the COMMIT is sent fails with its own error,
// not a *CommitError: the transaction certainly did not commit.
func TestFailureBeforeCommitIsNoCommitError(t *testing.T) {
	pool, _ := setup(t)
	err := pipetx.BeginFunc(t.Context(), pool, nil, func(tx *pipetx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO t VALUES (1), (1)`) // duplicate key
		return tx.SendBatch(t.Context(), b).Close()
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("err = %v, want a unique violation", err)
	}
	if _, ok := errors.AsType[*pipetx.CommitError](err); ok {
		t.Errorf("err = %v is a *pipetx.CommitError, want none before COMMIT went out", err)
	}
}

// Statements sent one by one begin the transaction on demand; an error
// from fn rolls back everything.
func TestExecThenRollback(t *testing.T) {
	pool, c := setup(t)
	boom := errors.New("boom")
	before := c.N()
	err := pipetx.BeginFunc(t.Context(), pool, []string{"set local statement_timeout = '5s'"}, func(tx *pipetx.Tx) error {
		if _, err := tx.Exec(t.Context(), `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		var timeout string
		if err := tx.QueryRow(t.Context(), `SHOW statement_timeout`).Scan(&timeout); err != nil {
			return err
		}
		if timeout != "5s" {
			t.Errorf("prelude: statement_timeout = %q", timeout)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	// begin+prelude, insert, show, rollback
	if got := c.N() - before; got != 4 {
		t.Errorf("calls = %d, want 4", got)
	}
	if n := count(t, pool); n != 0 {
		t.Errorf("rows = %d, want 0", n)
	}
}

// A transaction that sends nothing costs nothing, and a closed one
// refuses further statements.
func TestEmptyAndClosed(t *testing.T) {
	pool, c := setup(t)
	before := c.N()
	var tx *pipetx.Tx
	err := pipetx.BeginFunc(t.Context(), pool, nil, func(t *pipetx.Tx) error { tx = t; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := c.N() - before; got != 0 {
		t.Errorf("calls = %d, want 0", got)
	}
	if _, err := tx.Begin(t.Context()); !errors.Is(err, pipetx.ErrNested) {
		t.Errorf("Begin: %v, want ErrNested", err)
	}
	if err := tx.CommitBatch(t.Context(), &pgx.Batch{}); !errors.Is(err, pgx.ErrTxClosed) {
		t.Errorf("CommitBatch after the end: %v, want ErrTxClosed", err)
	}
}
