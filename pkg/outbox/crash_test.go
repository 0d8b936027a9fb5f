package outbox_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
)

// Environment of the child process TestRelayCrashAfterPublish starts.
const (
	childDBEnv   = "WEFT_OUTBOX_CHILD_DB"
	childNATSEnv = "WEFT_OUTBOX_CHILD_NATS"
	childExit    = 3
)

// A relay process dies after JetStream acked its batch and before it
// deleted the rows. A fresh relay republishes them; JetStream's dedupe
// window recognises the copies, so consumers see each message once.
func TestRelayCrashAfterPublish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testCtx(t)
	enqueue(t, b.db.Pool, msg("crash", 1), msg("crash", 2), msg("crash", 3))

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRelayChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDBEnv+"="+b.db.URL, childNATSEnv+"="+b.nats.URL())
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "child output:\n%s", out)
	require.Equal(t, childExit, exitErr.ExitCode(), "the child died in AfterPublish; output:\n%s", out)

	require.Equal(t, uint64(3), streamMsgs(t, b.js), "the child published the batch")
	require.Equal(t, 3, count(t, b.db.Pool, "outbox"), "and died before deleting it")

	r := b.startRelay(t, b.db.Pool, fastConfig(), nil)
	b.waitDrained(t, 3)
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"crash": 3})
	st := r.Stats()
	require.Equal(t, uint64(3), st.Duplicates, "the republish was recognised as duplicates")
	require.Zero(t, st.Published)
}

// TestRelayChildProcess is the child of TestRelayCrashAfterPublish: a relay
// whose process exits once its first batch is acked. It does nothing when
// run on its own.
func TestRelayChildProcess(t *testing.T) {
	dbURL, natsURL := os.Getenv(childDBEnv), os.Getenv(childNATSEnv)
	if dbURL == "" || natsURL == "" {
		t.Skip("runs only as the child of TestRelayCrashAfterPublish")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	nc, err := nats.Connect(natsURL, nats.ReconnectBufSize(-1))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)

	cfg := fastConfig()
	cfg.TestingKnobs.AfterPublish = func() { os.Exit(childExit) }
	r, err := outbox.NewRelay(pool, js, cfg, nil)
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	<-ctx.Done()
	require.NoError(t, errors.New("the relay never published"))
}
