package weftest_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

func TestNewDBIsMigratedAndPrivate(t *testing.T) {
	t.Parallel()
	a, b := weftest.NewDB(t), weftest.NewDB(t)
	require.NotEqual(t, a.Name, b.Name)
	var n int
	require.NoError(t, a.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM weft_schema_migrations").Scan(&n))
	require.Positive(t, n)
}

func TestNATSRestartKeepsStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := weftest.NewNATS(t)
	js := srv.JetStream(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "t.1", []byte("x"))
	require.NoError(t, err)
	srv.Restart()
	js = srv.JetStream(t)
	s, err := js.Stream(ctx, "T")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.State.Msgs)
}
