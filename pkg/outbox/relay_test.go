package outbox_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/weftest"
)

// produced is what a background produce committed, or its error.
type produced struct {
	want map[string]int
	err  error
}

// produceAsync runs produce in the background; its channel receives the
// outcome once every message is committed.
func produceAsync(pool *pgxpool.Pool, keys []string, perKey int) <-chan produced {
	done := make(chan produced, 1)
	go func() {
		want, err := produce(pool, keys, perKey)
		done <- produced{want, err}
	}()
	return done
}

// produce commits perKey messages for each key, one transaction each, the
// keys concurrently, so ids of different keys interleave. It returns the
// messages per key, or the first error. Safe in any goroutine.
func produce(pool *pgxpool.Pool, keys []string, perKey int) (map[string]int, error) {
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	for _, key := range keys {
		wg.Go(func() {
			for seq := 1; seq <= perKey; seq++ {
				if err := enqueueErr(pool, msg(key, seq)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	want := make(map[string]int)
	for _, k := range keys {
		want[k] = perKey
	}
	return want, <-errs
}

func mustProduce(t *testing.T, pool *pgxpool.Pool, keys []string, perKey int) map[string]int {
	t.Helper()
	want, err := produce(pool, keys, perKey)
	require.NoError(t, err)
	return want
}

func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// Both JetStream fsync settings are supported, and ordering and
// exactly-once delivery hold under each (DESIGN.md, "The bus is a
// transport").
func TestRelayKeepsOrderPerKey(t *testing.T) {
	t.Parallel()
	t.Run("sync=default", func(t *testing.T) { t.Parallel(); testRelayKeepsOrderPerKey(t) })
	t.Run("sync=always", func(t *testing.T) { t.Parallel(); testRelayKeepsOrderPerKey(t, weftest.WithSyncAlways()) })
}

func testRelayKeepsOrderPerKey(t *testing.T, natsOpts ...weftest.NATSOption) {
	b := setup(t, natsOpts...)
	cfg := fastConfig()
	cfg.BatchSize, cfg.MaxInFlight = 16, 4 // many full batches, a bounded pipeline
	var observed sync.Map
	cfg.ObservePublish = func(enqueuedAt, ackedAt time.Time) {
		observed.Store(enqueuedAt, ackedAt)
	}
	r := b.startRelay(t, b.db.Pool, cfg)

	ks := keys("order", 12)
	partitions := make(map[int]bool)
	for _, k := range ks {
		partitions[outbox.PartitionOf(k)] = true
	}
	require.Greater(t, len(partitions), 1, "keys span several partitions")

	want := mustProduce(t, b.db.Pool, ks, 40)
	// A multi-message transaction keeps its order too.
	enqueue(t, b.db.Pool, msg("order-multi", 1), msg("order-multi", 2), msg("order-multi", 3))
	want["order-multi"] = 3

	b.waitDrained(t, 12*40+3)
	requireExactlyOnceInOrder(t, readStream(t, b.js), want)
	st := r.Stats()
	require.Equal(t, uint64(12*40+3), st.Published)
	require.Zero(t, st.Duplicates)
	n := 0
	observed.Range(func(k, v any) bool {
		require.False(t, v.(time.Time).Before(k.(time.Time)), "acked after enqueued")
		n++
		return true
	})
	require.Positive(t, n, "ObservePublish was called")
}

func TestRelayWakesOnNotify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := fastConfig()
	cfg.PollInterval = time.Hour // the fallback cannot fire within the test
	r := b.startRelay(t, b.db.Pool, cfg)
	require.Eventually(t, func() bool { return r.Stats().Partitions == outbox.Partitions }, waitFor, 5*time.Millisecond)

	// Each row is committed only after the previous one was published, so
	// an idle worker can only learn of it by NOTIFY. (The first round or
	// two may also be served by the worker's start-up claim.)
	for seq := 1; seq <= 5; seq++ {
		enqueue(t, b.db.Pool, msg("notify", seq))
		b.waitDrained(t, seq)
	}
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"notify": 5})
}

func TestRelayPublishesRowsCommittedWhileNoRelayRan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want := mustProduce(t, b.db.Pool, keys("before", 3), 20)
	require.Equal(t, 60, count(t, b.db.Pool, "outbox"))

	b.startRelay(t, b.db.Pool, fastConfig())
	b.waitDrained(t, 60)
	requireExactlyOnceInOrder(t, readStream(t, b.js), want)
}

// A row with a smaller id committed after a larger one was published is
// still published: the relay reads unpublished rows, not a high-water mark.
func TestRelayPublishesLateCommits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testCtx(t)
	b.startRelay(t, b.db.Pool, fastConfig())

	early := samePartitionKey(t, "late") // one partition: one worker, one claim order
	late, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, outbox.EnqueueTx(ctx, late, msg("late", 1))) // draws the smaller id
	enqueue(t, b.db.Pool, msg(early, 1))
	b.waitDrained(t, 1)

	require.NoError(t, late.Commit(ctx))
	b.waitDrained(t, 2)
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"late": 1, early: 1})
}

func TestRelayLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testCtx(t)
	r, err := outbox.NewRelay(b.db.Pool, b.nats.JetStream(t), fastConfig())
	require.NoError(t, err)
	require.NoError(t, r.Stop(ctx), "stopping a relay never started is a no-op")
	require.NoError(t, r.Start(ctx))
	require.ErrorIs(t, r.Start(ctx), startstop.ErrAlreadyStarted)
	enqueue(t, b.db.Pool, msg("life", 1))
	b.waitDrained(t, 1)
	require.NoError(t, r.Stop(ctx))
	require.NoError(t, r.Stop(ctx), "Stop is idempotent")
	require.Zero(t, r.Stats().Partitions, "a stopped relay holds no partition")

	// Its locks are released: a new relay takes every partition.
	r2 := b.startRelay(t, b.db.Pool, fastConfig())
	require.Eventually(t, func() bool { return r2.Stats().Partitions == outbox.Partitions }, waitFor, 5*time.Millisecond)
}
