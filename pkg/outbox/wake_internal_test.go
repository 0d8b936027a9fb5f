package outbox

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// TestWakeProtocol steps a worker of two partitions by hand through the
// race the wake protocol exists for: a writer checks its partition, the
// worker's second, while the relay is busy (so it does not notify), and
// commits only after the relay has gone idle. The relay's arming must
// wait for that writer and claim its row; no row may be left for
// PollInterval.
func TestWakeProtocol(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := weftest.NewDB(t)
	keys := keysInPartitions(t, 2)
	key := keys[1]
	p := PartitionOf(key)
	parts := []int32{int32(PartitionOf(keys[0])), int32(p)}
	w := &worker{r: &Relay{pool: db.Pool, cfg: RelayConfig{}.WithDefaults()}, partitions: parts}
	listener := listen(ctx, t, db.URL)
	m := Message{Subject: "weft.events." + key, Payload: []byte("x"), OrderKey: key}

	// Busy: writers see the partition disarmed and do not notify.
	require.NoError(t, w.setArmed(ctx, false))
	m.DedupeID = "straggler"
	straggler, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, EnqueueTx(ctx, straggler, m))

	// Idle: arming cannot settle while the straggler is open, so the worker
	// may not sleep; its claim cannot see the uncommitted row yet.
	require.NoError(t, w.setArmed(ctx, true))
	require.False(t, w.settled, "the barrier waited for the open writer and gave up")
	rows, err := outboxClaim(ctx, db.Pool, parts, 10)
	require.NoError(t, err)
	require.Empty(t, rows)

	require.NoError(t, straggler.Commit(ctx))
	require.NoError(t, w.setArmed(ctx, true))
	require.True(t, w.settled, "the barrier passes once the writer has committed")
	rows, err = outboxClaim(ctx, db.Pool, parts, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1, "the claim after the barrier sees the straggler's row")
	require.Equal(t, "straggler", rows[0].dedupeID)
	require.Equal(t, p, rows[0].partition, "the claim carries each row's stored partition")
	requireNoNotification(ctx, t, listener, "the straggler saw a busy relay")

	// Armed and settled: the next writer notifies.
	m.DedupeID = "after-arming"
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return EnqueueTx(ctx, tx, m) }))
	n, err := listener.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(p), n.Payload)

	// Busy again: no notification.
	require.NoError(t, w.setArmed(ctx, false))
	m.DedupeID = "while-busy"
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return EnqueueTx(ctx, tx, m) }))
	requireNoNotification(ctx, t, listener, "the relay is busy")
}

// TestWakeNotifiesWithoutState: with no outbox_wake row (a new database, or
// after a crash emptied the unlogged table), writers notify.
func TestWakeNotifiesWithoutState(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := weftest.NewDB(t)
	listener := listen(ctx, t, db.URL)
	m := Message{Subject: "weft.events.k", Payload: []byte("x"), DedupeID: "d", OrderKey: "k"}
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return EnqueueTx(ctx, tx, m) }))
	n, err := listener.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(PartitionOf("k")), n.Payload)
}

func listen(ctx context.Context, t *testing.T, url string) *pgx.Conn {
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.WithoutCancel(ctx)) })
	_, err = conn.Exec(ctx, "LISTEN "+NotifyChannel)
	require.NoError(t, err)
	return conn
}

// requireNoNotification sends a marker notification and requires it to be
// the next one: nothing was notified before it.
func requireNoNotification(ctx context.Context, t *testing.T, conn *pgx.Conn, why string) {
	_, err := conn.Exec(ctx, "SELECT pg_notify($1, 'marker')", NotifyChannel)
	require.NoError(t, err)
	n, err := conn.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, "marker", n.Payload, "no notification expected: %s", why)
}
