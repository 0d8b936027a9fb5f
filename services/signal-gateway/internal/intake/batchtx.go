package intake

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weftrun/weft/pkg/eventlog"
)

// batchTx is a transaction whose statements are sent in batches, each
// batch in one round trip: a signal is decided on what one batch reads
// and written by the next ones (signalTx).
type batchTx interface {
	// batch returns an empty batch for the transaction's next statements.
	batch() *pgx.Batch
	// send sends b in the transaction and reads all its results, running
	// their callbacks, and returns the first error. With commit the
	// transaction commits after b's statements, if they all succeed, and
	// must not be used again.
	send(ctx context.Context, b *pgx.Batch, commit bool) error
}

// connTx is a transaction of its own on one connection. Its BEGIN goes
// out with its first batch and its COMMIT with its last, so neither costs
// a round trip. A statement that fails aborts it; end rolls back whatever
// was not committed. Not safe for concurrent use.
//
// Its statements run on generic plans (genericPlans). Postgres would
// otherwise plan anew, at every execution, each one that reads the
// partitioned run_events: a plan for the one partition a run id selects
// always looks cheaper than the generic plan, which prunes the others
// when it starts. That planning costs more than the reads themselves.
type connTx struct {
	conn  *pgx.Conn
	begun bool
}

// genericPlans makes the rest of the transaction run its prepared
// statements, and those of the functions it calls, on generic plans.
const genericPlans = eventlog.GenericPlansSQL

func (t *connTx) batch() *pgx.Batch {
	b := &pgx.Batch{}
	if !t.begun {
		b.Queue("begin")
		b.Queue(genericPlans)
		t.begun = true
	}
	return b
}

func (t *connTx) send(ctx context.Context, b *pgx.Batch, commit bool) error {
	if commit {
		b.Queue("commit").Exec(func(tag pgconn.CommandTag) error {
			if tag.String() != "COMMIT" { // Postgres answers a COMMIT of an aborted transaction with ROLLBACK
				return pgx.ErrTxCommitRollback
			}
			return nil
		})
	}
	return t.conn.SendBatch(ctx, b).Close()
}

// end rolls the transaction back unless it committed or never began.
// Should the rollback fail, the connection stays in the transaction and
// the pool discards it on release.
func (t *connTx) end(ctx context.Context) {
	if t.conn.IsClosed() || t.conn.PgConn().TxStatus() == 'I' {
		return
	}
	_, _ = t.conn.Exec(ctx, "rollback")
}

// savepointTx is a savepoint in a caller's transaction: its batches go
// out on the savepoint, and committing it releases the savepoint, a round
// trip of its own; what it wrote commits with the caller's transaction.
type savepointTx struct {
	sp        pgx.Tx
	committed bool
}

func (t *savepointTx) batch() *pgx.Batch { return &pgx.Batch{} }

func (t *savepointTx) send(ctx context.Context, b *pgx.Batch, commit bool) error {
	if err := t.sp.SendBatch(ctx, b).Close(); err != nil || !commit {
		return err
	}
	if err := t.sp.Commit(ctx); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	t.committed = true
	return nil
}
