package outbox_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// TestMain runs the tests, or, in a crash test's child process, its relay.
func TestMain(m *testing.M) { weftest.MainWithChild(m, childDBEnv, crashChild) }

const waitFor = 30 * time.Second // deadline for every asynchronous condition

// bundle is one test's Postgres database, NATS server and stream.
type bundle struct {
	db   *weftest.DB
	nats *weftest.NATS
	js   jetstream.JetStream // the test's own connection, for reading the stream
}

func setup(t *testing.T, natsOpts ...weftest.NATSOption) *bundle {
	t.Helper()
	b := &bundle{db: weftest.NewDB(t), nats: weftest.NewNATS(t, natsOpts...)}
	b.js = b.nats.JetStream(t)
	require.NoError(t, streams.Ensure(testCtx(t), b.js, streams.Config{MaxBytes: 256 << 20}))
	return b
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	t.Cleanup(cancel)
	return ctx
}

// fastConfig keeps every interval short so tests finish quickly.
func fastConfig() outbox.RelayConfig {
	return outbox.RelayConfig{
		InitialBackoff:    2 * time.Millisecond,
		MaxBackoff:        50 * time.Millisecond,
		AckTimeout:        2 * time.Second,
		PollInterval:      100 * time.Millisecond,
		LockRetryInterval: 50 * time.Millisecond,
	}
}

// startRelay starts a relay on its own NATS connection and stops it when
// the test ends.
func (b *bundle) startRelay(t *testing.T, pool *pgxpool.Pool, cfg outbox.RelayConfig) *outbox.Relay {
	t.Helper()
	r, err := outbox.NewRelay(pool, b.nats.JetStream(t), cfg)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Stop(ctx))
	})
	return r
}

// msg is message seq of key: published on weft.events.out.<key>, payload and
// dedupe id "<key>/<seq>". key must be a valid subject token.
func msg(key string, seq int) outbox.Message {
	id := key + "/" + strconv.Itoa(seq)
	return outbox.Message{
		Subject: streams.EventsSubjectPrefix + "." + streams.EventClassOutcome + "." + key, Payload: []byte(id), DedupeID: id, OrderKey: key,
		Headers: map[string]string{"Weft-Run-Seq": strconv.Itoa(seq)},
	}
}

// enqueueErr commits msgs in one transaction. Safe in any goroutine.
func enqueueErr(pool *pgxpool.Pool, msgs ...outbox.Message) error {
	ctx := context.Background()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return outbox.EnqueueTx(ctx, tx, msgs...)
	})
}

func enqueue(t testing.TB, pool *pgxpool.Pool, msgs ...outbox.Message) {
	t.Helper()
	require.NoError(t, enqueueErr(pool, msgs...))
}

func count(t testing.TB, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

func streamMsgs(t testing.TB, js jetstream.JetStream) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), streams.EventsStream)
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return info.State.Msgs
}

// waitDrained waits until the outbox is empty and the stream holds n
// messages.
func (b *bundle) waitDrained(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return count(t, b.db.Pool, "outbox") == 0 && streamMsgs(t, b.js) == uint64(n)
	}, waitFor, 10*time.Millisecond, "outbox drained into %d stream messages", n)
}

type received struct {
	key      string
	seq      int
	dedupeID string
}

// readStream reads every message of WEFT_EVENTS with an ordered consumer.
func readStream(t *testing.T, js jetstream.JetStream) []received {
	t.Helper()
	ctx := testCtx(t)
	n := int(streamMsgs(t, js))
	cons, err := js.OrderedConsumer(ctx, streams.EventsStream, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	var got []received
	for len(got) < n {
		require.NoError(t, ctx.Err(), "read %d of %d messages", len(got), n)
		batch, err := cons.Fetch(n-len(got), jetstream.FetchMaxWait(time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			id := m.Headers().Get(jetstream.MsgIDHeader)
			key, seq, ok := strings.Cut(id, "/")
			require.True(t, ok, "dedupe id %q", id)
			s, err := strconv.Atoi(seq)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(m.Data()), id), "payload of %s", id)
			subjectKey, err := streams.RunOfEventSubject(m.Subject()) // stored as weft.events.<partition>.out.<key>
			require.NoError(t, err)
			require.Equal(t, subjectKey, key)
			require.Equal(t, seq, m.Headers().Get("Weft-Run-Seq"))
			got = append(got, received{key: key, seq: s, dedupeID: id})
		}
	}
	return got
}

// requireExactlyOnceInOrder checks that got holds, for each key, the
// messages 1..want[key] in order, each once, and nothing else.
func requireExactlyOnceInOrder(t *testing.T, got []received, want map[string]int) {
	t.Helper()
	next := make(map[string]int)
	for _, r := range got {
		_, known := want[r.key]
		require.True(t, known, "unexpected key %q", r.key)
		require.Equal(t, next[r.key]+1, r.seq, "key %s: message %d after %d (duplicate or out of order)", r.key, r.seq, next[r.key])
		require.Equal(t, fmt.Sprintf("%s/%d", r.key, r.seq), r.dedupeID)
		next[r.key] = r.seq
	}
	for key, n := range want {
		require.Equal(t, n, next[key], "key %s: messages delivered", key)
	}
}
