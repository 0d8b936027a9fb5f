package intake

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/eventlog"
)

// batchTx is a transaction whose statements are sent in batches, each
// batch in one round trip: a signal is decided on what one batch reads
// and written by the next ones (signalTx).
type batchTx interface {
	// send sends b in the transaction and reads all its results, running
	// their callbacks, and returns the first error. With commit the
	// transaction commits after b's statements, if they all succeed, and
	// must not be used again.
	send(ctx context.Context, b *pgx.Batch, commit bool) error
}

// pipeTx is a transaction of its own (pipetx): its BEGIN goes out with
// its first batch and its COMMIT with its last, so neither costs a round
// trip, and its statements run on generic plans (genericPlans).
type pipeTx struct{ tx *pipetx.Tx }

// genericPlans makes the rest of the transaction run its prepared
// statements, and those of the functions it calls, on generic plans
// (eventlog.GenericPlansSQL says why).
const genericPlans = eventlog.GenericPlansSQL

func (t pipeTx) send(ctx context.Context, b *pgx.Batch, commit bool) error {
	if commit {
		return t.tx.CommitBatch(ctx, b)
	}
	return t.tx.SendBatch(ctx, b).Close()
}

// savepointTx is a savepoint in a caller's transaction: its batches go
// out on the savepoint, and committing it releases the savepoint, a round
// trip of its own; what it wrote commits with the caller's transaction.
type savepointTx struct {
	sp        pgx.Tx
	committed bool
}

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
