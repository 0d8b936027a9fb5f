package outbox_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/weftest"
)

// EnqueueBatch writes its rows once its batch is sent, and
// only if the transaction commits.
func TestEnqueueBatchWritesRowsWithTheTransaction(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ctx := testCtx(t)
	m1, m2 := msg("run-a", 1), msg("run-b", 1)
	for _, end := range []string{"rollback", "commit"} {
		b := &pgx.Batch{}
		b.Queue("begin")
		require.NoError(t, outbox.EnqueueBatch(ctx, b, m1, m2))
		b.Queue(end)
		require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
	}

	rows, err := db.Pool.Query(ctx, `SELECT order_key, subject, dedupe_id, payload FROM outbox ORDER BY id`)
	require.NoError(t, err)
	type row struct {
		OrderKey, Subject, DedupeID string
		Payload                     []byte
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	require.NoError(t, err)
	require.Len(t, got, 2, "the rolled back rows are not there")
	for i, m := range []outbox.Message{m1, m2} {
		require.Equal(t, m.OrderKey, got[i].OrderKey)
		require.Equal(t, m.Subject, got[i].Subject)
		require.Equal(t, m.DedupeID, got[i].DedupeID)
		require.Equal(t, string(m.Payload), string(got[i].Payload))
	}
}

func TestEnqueueBatchRefusesInvalidMessagesBeforeQueuing(t *testing.T) {
	t.Parallel()
	bad := msg("run-a", 2)
	bad.DedupeID = " "
	b := &pgx.Batch{}
	require.ErrorIs(t, outbox.EnqueueBatch(testCtx(t), b, msg("run-a", 1), bad), outbox.ErrInvalidMessage)
	require.Zero(t, b.Len())
	require.NoError(t, outbox.EnqueueBatch(testCtx(t), b))
	require.Zero(t, b.Len(), "no messages queue nothing")
}
