package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/engine"
)

// A plan carries a secret reference; the worker resolves it through its
// provider and uses it. One activity returns a digest of it, another fails
// with the value in its error. The value never reaches an event, the
// outbox, a bus message or a log line: the test greps the whole log, the
// tables and the captured logs for it.
func TestSecretValuesNeverLeave(t *testing.T) {
	const value = "s3cr3t-v4lu3-d0-n0t-l34k"
	t.Setenv("WEFT_TESTSECRET_API", value) // not parallel: it sets the environment

	logs := &weftest.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	s := newStack(t)
	s.logger = logger
	s.runEngine(t, engine.Config{})
	w, err := worker.New(s.js, worker.Config{Logger: logger},
		worker.WithSecretsProvider("env", worker.EnvSecrets{Prefix: "WEFT_TESTSECRET_"}))
	require.NoError(t, err)
	require.NoError(t, w.Register("digest", func(ctx context.Context, in worker.Input) (worker.Output, error) {
		v, err := in.Secret(ctx, "api")
		if err != nil {
			return worker.Output{}, err
		}
		sum := sha256.Sum256([]byte(v))
		return worker.NewOutput(map[string]string{"digest": hex.EncodeToString(sum[:])})
	}))
	require.NoError(t, w.Register("leak", func(ctx context.Context, in worker.Input) (worker.Output, error) {
		v, err := in.Secret(ctx, "api")
		if err != nil {
			return worker.Output{}, err
		}
		return worker.Output{}, worker.NonRetryable("LEAK", fmt.Sprintf("upstream refused token %s", v))
	}))
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, w.Stop(context.Background())) })

	runID := s.start(t, parsePlan(t, `{"planId":"sec","planVersion":"1","steps":[
		{"id":"use","activity":"digest","input":{"token":{"secretRef":"api"}},
		 "secrets":[{"name":"api","provider":"env","key":"API"}]},
		{"id":"oops","activity":"leak","dependsOn":["use"],"input":{"token":{"secretRef":"api"}},
		 "secrets":[{"name":"api","provider":"env","key":"API"}]}]}`))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunFailed, terminal(evs), "the leaking step failed the run")
	sum := sha256.Sum256([]byte(value))
	var used bool
	for _, ev := range evs {
		if ev.EventType == events.StepCompleted && ev.StepID == "use" {
			var d events.StepCompletedData
			require.NoError(t, ev.Data(&d))
			require.JSONEq(t, `{"digest":"`+hex.EncodeToString(sum[:])+`"}`, string(d.Output), "the activity resolved the real value")
			used = true
		}
	}
	require.True(t, used)

	var everything strings.Builder
	for _, table := range []string{"run_events", "outbox", "outbox_dead"} {
		var dump string
		require.NoError(t, s.db.Pool.QueryRow(t.Context(),
			`SELECT coalesce(string_agg(t::text, E'\n'), '') FROM `+table+` t`).Scan(&dump))
		everything.WriteString(dump)
	}
	require.Contains(t, everything.String(), `"digest"`, "the dump holds the step outputs")
	require.NotContains(t, everything.String(), value, "no table holds the secret value")
	require.NotContains(t, logs.String(), value, "no log line holds the secret value")
	for _, m := range readAll(t, s) {
		require.NotContains(t, string(m), value, "no bus message holds the secret value")
	}
}

// readAll returns the payloads of every message in WEFT_EVENTS and
// WEFT_RESULTS.
func readAll(t *testing.T, s *stack) [][]byte {
	t.Helper()
	var out [][]byte
	for _, name := range []string{streams.EventsStream, streams.ResultsStream} {
		st, err := s.js.Stream(t.Context(), name)
		require.NoError(t, err)
		info, err := st.Info(t.Context())
		require.NoError(t, err)
		cons, err := s.js.OrderedConsumer(t.Context(), name, jetstream.OrderedConsumerConfig{})
		require.NoError(t, err)
		for got := uint64(0); got < info.State.Msgs; {
			batch, err := cons.Fetch(int(info.State.Msgs-got), jetstream.FetchMaxWait(time.Second))
			require.NoError(t, err)
			for m := range batch.Messages() {
				out = append(out, m.Data())
				got++
			}
			require.NoError(t, batch.Error())
		}
	}
	return out
}
