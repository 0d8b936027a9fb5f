package outbox_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestEnqueueTxWritesRowsInOrder(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ctx := testCtx(t)
	m1, m2, m3 := msg("run-a", 1), msg("run-a", 2), msg("run-b", 1)
	m3.Payload = nil
	enqueue(t, db.Pool, m1, m2, m3)

	rows, err := db.Pool.Query(ctx, `SELECT partition, order_key, subject, headers, payload, dedupe_id, attempts,
		next_attempt_at IS NULL, last_error IS NULL FROM outbox ORDER BY id`)
	require.NoError(t, err)
	type stored struct {
		partition              int
		orderKey, subject      string
		headers                map[string]string
		payload                []byte
		dedupeID               string
		attempts               int
		noBackoff, noLastError bool
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stored, error) {
		var s stored
		err := r.Scan(&s.partition, &s.orderKey, &s.subject, &s.headers, &s.payload, &s.dedupeID, &s.attempts, &s.noBackoff, &s.noLastError)
		return s, err
	})
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, m := range []outbox.Message{m1, m2, m3} {
		require.Equal(t, outbox.PartitionOf(m.OrderKey), got[i].partition)
		require.Equal(t, m.OrderKey, got[i].orderKey)
		require.Equal(t, m.Subject, got[i].subject)
		require.Equal(t, m.Headers, got[i].headers)
		require.Equal(t, string(m.Payload), string(got[i].payload))
		require.Equal(t, m.DedupeID, got[i].dedupeID)
		require.Zero(t, got[i].attempts)
		require.True(t, got[i].noBackoff)
		require.True(t, got[i].noLastError)
	}
}

func TestEnqueueTxEmptyOrderKeyUsesDedupeID(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	m := msg("run-a", 1)
	m.OrderKey = ""
	enqueue(t, db.Pool, m)
	var key string
	var partition int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT order_key, partition FROM outbox").Scan(&key, &partition))
	require.Equal(t, m.DedupeID, key)
	require.Equal(t, outbox.PartitionOf(m.DedupeID), partition)
}

func TestEnqueueTxNotifiesAtCommit(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, "LISTEN "+outbox.NotifyChannel)
	require.NoError(t, err)

	m := msg("run-n", 1)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, outbox.EnqueueTx(ctx, tx, m, msg("run-n", 2)))
	require.NoError(t, tx.Rollback(ctx))
	enqueue(t, db.Pool, m)

	n, err := conn.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.NotifyChannel, n.Channel)
	require.Equal(t, strconv.Itoa(outbox.PartitionOf("run-n")), n.Payload)
	// The rolled-back transaction sent nothing, and the committed one sent
	// one notification for its one partition: the next notification is
	// the marker's.
	marker := "marker-0"
	for i := 1; outbox.PartitionOf(marker) == outbox.PartitionOf("run-n"); i++ {
		marker = "marker-" + strconv.Itoa(i) // another partition
	}
	enqueue(t, db.Pool, msg(marker, 1))
	n, err = conn.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(outbox.PartitionOf(marker)), n.Payload, "exactly one notification before the marker")
}

func TestEnqueueTxValidatesBeforeWriting(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ctx := testCtx(t)
	good := msg("run-v", 1)
	bad := func(edit func(*outbox.Message)) outbox.Message {
		m := msg("run-v", 2)
		edit(&m)
		return m
	}
	cases := map[string]outbox.Message{
		"empty subject":      bad(func(m *outbox.Message) { m.Subject = "" }),
		"empty token":        bad(func(m *outbox.Message) { m.Subject = "weft..x" }),
		"wildcard":           bad(func(m *outbox.Message) { m.Subject = "weft.events.*" }),
		"full wildcard":      bad(func(m *outbox.Message) { m.Subject = "weft.>" }),
		"space":              bad(func(m *outbox.Message) { m.Subject = "weft.events.a b" }),
		"system subject":     bad(func(m *outbox.Message) { m.Subject = "$JS.API.INFO" }),
		"missing dedupe id":  bad(func(m *outbox.Message) { m.DedupeID = "" }),
		"blank dedupe id":    bad(func(m *outbox.Message) { m.DedupeID = "  " }),
		"reserved header":    bad(func(m *outbox.Message) { m.Headers = map[string]string{"Nats-Msg-Id": "x"} }),
		"header colon":       bad(func(m *outbox.Message) { m.Headers = map[string]string{"a:b": "x"} }),
		"header line break":  bad(func(m *outbox.Message) { m.Headers = map[string]string{"A": "x\r\nB: y"} }),
		"empty header name":  bad(func(m *outbox.Message) { m.Headers = map[string]string{"": "x"} }),
		"header name spaces": bad(func(m *outbox.Message) { m.Headers = map[string]string{"A B": "x"} }),
	}
	for name, m := range cases {
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			return outbox.EnqueueTx(ctx, tx, good, m) // the valid one first: still nothing written
		})
		require.ErrorIs(t, err, outbox.ErrInvalidMessage, name)
	}
	sub := cases["wildcard"].Validate()
	require.ErrorIs(t, sub, streams.ErrInvalidToken)
	require.Zero(t, count(t, db.Pool, "outbox"), "nothing written")

	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return outbox.EnqueueTx(ctx, tx) }),
		"no messages is a no-op")
}

func TestPartitionOfIsStable(t *testing.T) {
	t.Parallel()
	// FNV-1a 32 of the key, mod 8: pinned, because rows written by one
	// build are served by relays of another during a rolling deploy.
	require.Equal(t, 5, outbox.PartitionOf(""))      // 0x811c9dc5 % 8
	require.Equal(t, 4, outbox.PartitionOf("a"))     // 0xe40c292c % 8
	require.Equal(t, 4, outbox.PartitionOf("run-1")) // 0x3c9d57fc % 8
	seen := make(map[int]bool)
	for i := range 100 {
		p := outbox.PartitionOf("run-" + strconv.Itoa(i))
		require.GreaterOrEqual(t, p, 0)
		require.Less(t, p, outbox.Partitions)
		seen[p] = true
	}
	require.Len(t, seen, outbox.Partitions, "100 keys reach every partition")
}
