package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// A dead letter keeps its row's format version, so that moving it back
// (docs/outbox.md) restores the row as it was written.
func TestDeadLetterKeepsTheRowVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.db.Pool.Exec(t.Context(), `INSERT INTO outbox (partition, order_key, subject, payload, dedupe_id, version)
		VALUES ($1, 'v2', 'weft.nowhere.v2', 'x', 'v2/1', 2)`, outbox.PartitionOf("v2"))
	require.NoError(t, err)
	cfg := fastConfig()
	cfg.MaxAttempts, cfg.InitialBackoff, cfg.MaxBackoff = 1, time.Millisecond, time.Millisecond
	b.startRelay(t, b.db.Pool, cfg)
	b.waitDrained(t, 0)
	var version int
	require.NoError(t, b.db.Pool.QueryRow(t.Context(), "SELECT version FROM outbox_dead WHERE dedupe_id = 'v2/1'").Scan(&version))
	require.Equal(t, 2, version)
}

func TestRelayDeadLettersAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logs := &weftest.Buffer{}
	cfg := fastConfig()
	cfg.MaxAttempts, cfg.InitialBackoff, cfg.MaxBackoff = 3, time.Millisecond, 5*time.Millisecond
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	r := b.startRelay(t, b.db.Pool, cfg)

	nowhere := outbox.Message{Subject: "weft.nowhere.x", Payload: []byte("lost"), DedupeID: "dlq/1", OrderKey: "dlq"}
	enqueue(t, b.db.Pool, nowhere, msg("dlq", 1)) // a later row of the same key waits for it
	enqueue(t, b.db.Pool, msg("other", 1), msg("other", 2))

	b.waitDrained(t, 3)
	require.Equal(t, 1, count(t, b.db.Pool, "outbox_dead"))
	var attempts int
	var subject, dedupe, lastErr string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(),
		"SELECT attempts, subject, dedupe_id, last_error FROM outbox_dead").Scan(&attempts, &subject, &dedupe, &lastErr))
	require.Equal(t, 3, attempts)
	require.Equal(t, "weft.nowhere.x", subject)
	require.Equal(t, "dlq/1", dedupe)
	require.Contains(t, lastErr, "no response from stream")
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"dlq": 1, "other": 2})

	st := r.Stats()
	require.Equal(t, uint64(1), st.DeadLettered)
	require.Equal(t, uint64(3), st.Failures)
	line := dlqLogLine(t, logs.String())
	require.Equal(t, "ERROR", line["level"])
	require.Equal(t, "weft.nowhere.x", line["subject"])
	require.Equal(t, "dlq/1", line["dedupe_id"])
	require.Contains(t, line["last_error"], "no response from stream")
}

// A row the stream refuses holds back the later rows of its key, across
// batches, until it goes through; other keys of its partition flow
// meanwhile, and their notifications wake the relay while the refused row
// is still backing off.
func TestRelayFailingRowHoldsBackItsKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testCtx(t)
	s, err := b.js.Stream(ctx, streams.EventsStream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	limited := info.Config
	limited.MaxMsgSize = 1024
	_, err = b.js.UpdateStream(ctx, limited)
	require.NoError(t, err)

	cfg := fastConfig()
	cfg.MaxAttempts, cfg.InitialBackoff, cfg.MaxBackoff = 50, 50*time.Millisecond, 100*time.Millisecond
	// One publish in flight: a pipelined later row could be stored before
	// the refusal of an earlier one arrives (docs/outbox.md).
	cfg.MaxInFlight = 1
	r := b.startRelay(t, b.db.Pool, cfg)

	free := samePartitionKey(t, "held")
	big := msg("held", 1)
	big.Payload = append(big.Payload, make([]byte, 2048)...)
	enqueue(t, b.db.Pool, big, msg("held", 2))
	enqueue(t, b.db.Pool, msg("held", 3))
	require.Eventually(t, func() bool {
		var attempts int
		err := b.db.Pool.QueryRow(ctx, "SELECT attempts FROM outbox WHERE dedupe_id = 'held/1'").Scan(&attempts)
		return err == nil && attempts >= 1
	}, waitFor, time.Millisecond, "held/1 is refused")
	const frees = 20
	for seq := 1; seq <= frees; seq++ {
		enqueue(t, b.db.Pool, msg(free, seq))
		require.Eventually(t, func() bool { return streamMsgs(t, b.js) >= uint64(seq) }, waitFor, time.Millisecond)
	}
	require.Equal(t, uint64(frees), streamMsgs(t, b.js), "held/2 and held/3 wait behind held/1")
	var heldRows int
	require.NoError(t, b.db.Pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE order_key = 'held'").Scan(&heldRows))
	require.Equal(t, 3, heldRows)

	limited.MaxMsgSize = -1
	_, err = b.js.UpdateStream(ctx, limited)
	require.NoError(t, err)
	b.waitDrained(t, frees+3)
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"held": 3, free: frees})
	require.Zero(t, r.Stats().DeadLettered)
	require.Positive(t, r.Stats().Failures)
}

// samePartitionKey returns a key other than key in key's partition.
func samePartitionKey(t *testing.T, key string) string {
	t.Helper()
	for i := range 1000 {
		k := fmt.Sprintf("free-%d", i)
		if outbox.PartitionOf(k) == outbox.PartitionOf(key) {
			return k
		}
	}
	t.Fatalf("no key shares a partition with %q", key)
	return ""
}

// dlqLogLine returns the one log record with alert=OUTBOX_DLQ.
func dlqLogLine(t *testing.T, logs string) map[string]any {
	t.Helper()
	var found []map[string]any
	for l := range strings.Lines(logs) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		if rec["alert"] == "OUTBOX_DLQ" {
			found = append(found, rec)
		}
	}
	require.Len(t, found, 1, "one OUTBOX_DLQ record in:\n%s", logs)
	return found[0]
}

// Two relays run against one database; the one holding partitions is
// killed mid-stream and the other takes over. Every message reaches the
// stream once, in order.
func TestRelayTwoRelaysTakeOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testCtx(t)
	poolB, err := pgxpool.New(ctx, b.db.URL)
	require.NoError(t, err)
	t.Cleanup(poolB.Close)
	cfg := fastConfig()
	cfg.BatchSize = 8
	relayA := b.startRelay(t, b.db.Pool, cfg)
	relayB := b.startRelay(t, poolB, cfg)
	held := func() int { return relayA.Stats().Partitions + relayB.Stats().Partitions }
	require.Eventually(t, func() bool { return held() == outbox.Partitions }, waitFor, 5*time.Millisecond)

	victim, survivor := relayA, relayB
	if relayB.Stats().Partitions > relayA.Stats().Partitions {
		victim, survivor = relayB, relayA
	}
	done := produceAsync(b.db.Pool, keys("two", 6), 60)
	require.Eventually(t, func() bool { return streamMsgs(t, b.js) >= 60 }, waitFor, time.Millisecond)
	require.Positive(t, victim.Stats().Partitions, "the victim serves partitions when it dies")

	killed, cancel := context.WithCancel(ctx)
	cancel() // no drain: in-flight batches are abandoned, as in a crash
	_ = victim.Stop(killed)
	require.Eventually(t, func() bool { return survivor.Stats().Partitions == outbox.Partitions },
		waitFor, 5*time.Millisecond, "the standby takes every partition")

	res := <-done
	require.NoError(t, res.err)
	b.waitDrained(t, 6*60)
	requireExactlyOnceInOrder(t, readStream(t, b.js), res.want)
}

// NATS goes down and comes back while a producer keeps committing.
func TestRelaySurvivesNATSRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.startRelay(t, b.db.Pool, fastConfig())

	stop := make(chan struct{})
	produced := make(chan map[string]int)
	failed := make(chan error, 1)
	go func() {
		want := make(map[string]int)
		ks := keys("restart", 4)
		for i := 0; ; i++ {
			select {
			case <-stop:
				produced <- want
				return
			default:
			}
			k := ks[i%len(ks)]
			if err := enqueueErr(b.db.Pool, msg(k, want[k]+1)); err != nil {
				failed <- err
				produced <- want
				return
			}
			want[k]++
		}
	}()

	published := func() uint64 { s := r.Stats(); return s.Published + s.Duplicates }
	require.Eventually(t, func() bool { return published() >= 100 }, waitFor, time.Millisecond)
	b.nats.Restart()
	atRestart := published()
	require.Eventually(t, func() bool { return published() >= atRestart+100 }, waitFor, time.Millisecond,
		"publishing resumes after the restart")
	close(stop)
	want := <-produced
	require.Empty(t, failed, "the producer never failed")

	total := 0
	for _, n := range want {
		total += n
	}
	b.waitDrained(t, total)
	requireExactlyOnceInOrder(t, readStream(t, b.js), want)
	require.Positive(t, r.Stats().TransportFailures, "the relay saw the outage")
}

// Without JetStream every publish gets "no responders", as it would for a
// subject no stream captures; the relay tells the two apart and does not
// charge (nor dead-letter) rows for the bus's absence.
func TestRelayDoesNotChargeRowsWhileJetStreamIsDown(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	require.NoError(t, err)
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	require.True(t, srv.ReadyForConnections(10*time.Second))
	nc, err := nats.Connect(srv.ClientURL(), nats.ReconnectBufSize(-1))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)

	cfg := fastConfig()
	cfg.MaxAttempts = 2
	r, err := outbox.NewRelay(db.Pool, js, cfg)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, r.Stop(context.Background())) })

	enqueue(t, db.Pool, msg("nojs", 1))
	require.Eventually(t, func() bool { return r.Stats().TransportFailures >= 3 }, waitFor, time.Millisecond)
	var attempts int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT attempts FROM outbox").Scan(&attempts))
	require.Zero(t, attempts)
	require.Zero(t, count(t, db.Pool, "outbox_dead"))
	require.Zero(t, r.Stats().Failures)
}

// The relay's session dies (its locks with it): the relay stops its
// workers, reconnects, takes the partitions again and carries on.
func TestRelayRecoversFromSessionLoss(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testCtx(t)
	r := b.startRelay(t, b.db.Pool, fastConfig())
	sessionPID := func() int {
		var pid int
		err := b.db.Pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE application_name = 'weft-outbox-relay' AND datname = current_database()`).Scan(&pid)
		if err != nil {
			return 0
		}
		return pid
	}
	require.Eventually(t, func() bool { return r.Stats().Partitions == outbox.Partitions && sessionPID() != 0 },
		waitFor, 5*time.Millisecond)
	enqueue(t, b.db.Pool, msg("session", 1))
	b.waitDrained(t, 1)

	old := sessionPID()
	_, err := b.db.Pool.Exec(ctx, "SELECT pg_terminate_backend($1)", old)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pid := sessionPID()
		return pid != 0 && pid != old && r.Stats().Partitions == outbox.Partitions
	}, waitFor, 5*time.Millisecond, "a new session holds every partition")

	for seq := 2; seq <= 5; seq++ {
		enqueue(t, b.db.Pool, msg("session", seq))
	}
	b.waitDrained(t, 5)
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"session": 5})
}
