package outbox_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestRelayConfigRetrySpan(t *testing.T) {
	t.Parallel()
	// The arithmetic in RetrySpan's doc comment: 2s + 10×5s +
	// (0.1+0.2+0.4+0.8+1.6+3.2+6.4+10+10)s × 1.2.
	want := 2*time.Second + 50*time.Second + time.Duration(32.7*1.2*float64(time.Second))
	require.InDelta(t, want.Seconds(), outbox.RelayConfig{}.RetrySpan().Seconds(), 0.001)
	require.Less(t, outbox.RelayConfig{}.RetrySpan(), streams.DefaultDuplicates, "defaults fit the default window")
	require.NoError(t, outbox.RelayConfig{}.Validate())

	noJitter := outbox.RelayConfig{Jitter: -1, MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: time.Second,
		AckTimeout: time.Second, LockRetryInterval: time.Second}
	require.Equal(t, time.Second+3*time.Second+2*time.Second, noJitter.RetrySpan())
	require.Equal(t, noJitter.RetrySpan(), noJitter.WithDefaults().RetrySpan(), "WithDefaults is idempotent")
}

func TestRelayConfigValidate(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]outbox.RelayConfig{
		"negative batch":       {BatchSize: -1},
		"negative in flight":   {MaxInFlight: -1},
		"negative attempts":    {MaxAttempts: -1},
		"negative backoff":     {InitialBackoff: -time.Second},
		"max below initial":    {InitialBackoff: time.Second, MaxBackoff: time.Millisecond},
		"jitter above 1":       {Jitter: 1.5},
		"negative ack timeout": {AckTimeout: -time.Second},
		"negative poll":        {PollInterval: -time.Second},
		"negative lock retry":  {LockRetryInterval: -time.Second},
		"span beyond window":   {DuplicateWindow: time.Minute},
		"many attempts":        {MaxAttempts: 100},
	} {
		require.ErrorIs(t, cfg.Validate(), outbox.ErrInvalidConfig, name)
	}
}

func TestNewRelayRefuses(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	n := weftest.NewNATS(t)

	_, err := outbox.NewRelay(db.Pool, n.JetStream(t), outbox.RelayConfig{MaxAttempts: 100})
	require.ErrorIs(t, err, outbox.ErrInvalidConfig)

	buffering, err := nats.Connect(n.URL()) // the default reconnect buffer
	require.NoError(t, err)
	t.Cleanup(buffering.Close)
	js, err := jetstream.New(buffering)
	require.NoError(t, err)
	_, err = outbox.NewRelay(db.Pool, js, outbox.RelayConfig{})
	require.ErrorIs(t, err, outbox.ErrInvalidConfig)
	require.ErrorContains(t, err, "ReconnectBufSize(-1)")

	_, err = outbox.NewRelay(nil, n.JetStream(t), outbox.RelayConfig{})
	require.Error(t, err)
}
