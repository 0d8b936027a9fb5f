package outbox

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// enqueueTx sends EnqueueBatch's insert of msgs in tx, in one round trip:
// the tests' way to enqueue in a transaction of their own making.
func enqueueTx(ctx context.Context, tx pgx.Tx, msgs ...Message) error {
	b := &pgx.Batch{}
	if err := EnqueueBatch(ctx, b, msgs...); err != nil || b.Len() == 0 {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// EnqueueTx is enqueueTx for the package's external tests.
var EnqueueTx = enqueueTx
