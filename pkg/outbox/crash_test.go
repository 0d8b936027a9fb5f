package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
)

// Environment of the relay child process the crash tests start; TestMain
// runs runCrashChild instead of the tests when childDBEnv is set.
const (
	childDBEnv    = "WEFT_OUTBOX_CHILD_DB"
	childNATSEnv  = "WEFT_OUTBOX_CHILD_NATS"
	childCrashEnv = "WEFT_OUTBOX_CHILD_CRASH" // "before-publish", "after-publish" or "serve"
	childExit     = 3
)

// A relay process dies after claiming a batch of committed rows and before
// publishing any of it. A fresh relay publishes every row, once, in order.
func TestRelayCrashAfterCommitBeforePublish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	enqueue(t, b.db.Pool, msg("crash", 1), msg("crash", 2), msg("crash", 3))
	runCrashChild(t, b, "before-publish")

	require.Zero(t, streamMsgs(t, b.js), "the child died before publishing")
	require.Equal(t, 3, count(t, b.db.Pool, "outbox"), "the rows are still there")

	r := b.startRelay(t, b.db.Pool, fastConfig())
	b.waitDrained(t, 3)
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"crash": 3})
	require.Equal(t, uint64(3), r.Stats().Published)
}

// A relay process dies after JetStream acked its batch and before it
// deleted the rows. A fresh relay republishes them; JetStream's dedupe
// window recognises the copies, so consumers see each message once.
func TestRelayCrashAfterPublish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	enqueue(t, b.db.Pool, msg("crash", 1), msg("crash", 2), msg("crash", 3))
	runCrashChild(t, b, "after-publish")

	require.Equal(t, uint64(3), streamMsgs(t, b.js), "the child published the batch")
	require.Equal(t, 3, count(t, b.db.Pool, "outbox"), "and died before deleting it")

	r := b.startRelay(t, b.db.Pool, fastConfig())
	b.waitDrained(t, 3)
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"crash": 3})
	st := r.Stats()
	require.Equal(t, uint64(3), st.Duplicates, "the republish was recognised as duplicates")
	require.Zero(t, st.Published)
}

// runCrashChild runs this test binary as a relay process that exits with
// childExit at the crash point, and requires that it did.
func runCrashChild(t *testing.T, b *bundle, point string) {
	t.Helper()
	cmd := exec.CommandContext(testCtx(t), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+b.db.URL, childNATSEnv+"="+b.nats.URL(), childCrashEnv+"="+point)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "child output:\n%s", out)
	require.Equal(t, childExit, exitErr.ExitCode(), "the child died at %s; output:\n%s", point, out)
}

// crashChild is the child's main: a relay whose process exits at the crash
// point named by childCrashEnv. It returns an error when the relay never
// got there.
func crashChild() error {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	pool, err := pgxpool.New(ctx, os.Getenv(childDBEnv))
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, err := nats.Connect(os.Getenv(childNATSEnv), nats.ReconnectBufSize(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cfg := fastConfig()
	die := func() { os.Exit(childExit) }
	switch point := os.Getenv(childCrashEnv); point {
	case "before-publish":
		cfg.TestingKnobs.BeforePublish = die
	case "after-publish":
		cfg.TestingKnobs.AfterPublish = die
	case "serve": // until its test kills it
	default:
		return fmt.Errorf("unknown crash point %q", point)
	}
	r, err := outbox.NewRelay(pool, js, cfg)
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return errors.New("the relay never reached the crash point")
}

// A relay process that holds every partition is killed with SIGKILL while
// a producer commits. A standby relay, retrying the partition locks every
// DefaultLockRetryInterval (2 s), takes every partition once Postgres has
// ended the dead process's session, and every message reaches the stream
// once, in order. The time the partitions had no relay is logged: at most
// one lock retry, since a killed process's connection closes at once.
func TestRelayFailoverAfterSIGKILL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testCtx(t)
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childDBEnv+"="+b.db.URL, childNATSEnv+"="+b.nats.URL(), childCrashEnv+"=serve")
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	require.Eventually(t, func() bool { return heldPartitions(t, b.db.Pool) == outbox.Partitions },
		waitFor, 5*time.Millisecond, "the child relay holds every partition")

	cfg := fastConfig()
	cfg.LockRetryInterval = outbox.DefaultLockRetryInterval
	standby := b.startRelay(t, b.db.Pool, cfg)
	done := produceAsync(b.db.Pool, keys("failover", 6), 60)
	require.Eventually(t, func() bool { return streamMsgs(t, b.js) >= 60 }, waitFor, time.Millisecond, "the child publishes")
	require.Zero(t, standby.Stats().Partitions, "the standby waits while the child lives")

	require.NoError(t, child.Process.Kill())
	killed := time.Now()
	_ = child.Wait()
	require.Eventually(t, func() bool { return standby.Stats().Partitions == outbox.Partitions },
		waitFor, 5*time.Millisecond, "the standby takes every partition")
	t.Logf("relay killed: the standby held every partition after %v", time.Since(killed).Round(time.Millisecond))

	res := <-done
	require.NoError(t, res.err)
	b.waitDrained(t, 6*60)
	requireExactlyOnceInOrder(t, readStream(t, b.js), res.want)
}

// heldPartitions counts the relay partition locks held in pool's database.
func heldPartitions(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = x'776f7862'::bigint::oid
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
	require.NoError(t, err)
	return n
}
