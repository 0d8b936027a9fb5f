package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestCancelsDefinition(t *testing.T) {
	t.Parallel()
	sc := streams.Cancels(streams.Config{})
	require.Equal(t, streams.CancelsStream, sc.Name)
	require.Equal(t, []string{"weft.cancel.*"}, sc.Subjects)
	require.Equal(t, jetstream.LimitsPolicy, sc.Retention)
	require.Equal(t, jetstream.FileStorage, sc.Storage)
	require.Equal(t, jetstream.DiscardOld, sc.Discard, "a full stream drops old notices, never holds the relay")
	require.True(t, sc.AllowDirect, "workers look notices up with a direct get")
	require.Equal(t, streams.DefaultCancelsMaxBytes, sc.MaxBytes)
	require.Equal(t, streams.Tasks(streams.Config{}).MaxAge, sc.MaxAge, "a notice lives as long as a task")
	require.True(t, sc.DenyDelete)
	require.True(t, sc.DenyPurge)

	custom := streams.Cancels(streams.Config{MaxAge: time.Hour, MaxBytes: 1 << 30, CancelsMaxBytes: 1 << 20})
	require.Equal(t, time.Hour, custom.MaxAge)
	require.Equal(t, time.Hour, streams.Tasks(streams.Config{MaxAge: time.Hour}).MaxAge)
	require.Equal(t, int64(1<<20), custom.MaxBytes, "CancelsMaxBytes, not MaxBytes")

	require.ErrorIs(t, streams.Config{CancelsMaxBytes: -1}.Validate(), streams.ErrInvalidConfig)
	require.NoError(t, streams.Config{CancelsMaxBytes: 1}.Validate())
}

// Ensure creates WEFT_CANCELS; a core NATS publish on a run's cancel
// subject is stored, and the last one is read back with a direct get.
// Full, the stream drops its oldest notice and keeps taking new ones.
func TestCancelsStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := weftest.NewNATS(t)
	js := srv.JetStream(t)
	const limit = 4 << 10
	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 16 << 20, CancelsMaxBytes: limit}))
	s, err := js.Stream(ctx, streams.CancelsStream)
	require.NoError(t, err)

	nc := srv.Conn(t)
	subject := func(i int) string {
		subj, err := streams.CancelSubject(fmt.Sprintf("run-%d", i))
		require.NoError(t, err)
		return subj
	}
	payload := make([]byte, 512)
	info := func() jetstream.StreamState {
		i, err := s.Info(ctx)
		require.NoError(t, err)
		return i.State
	}
	for n := 1; ; n++ {
		require.Less(t, n, 100, "the stream never filled")
		require.NoError(t, nc.Publish(subject(n), payload))
		require.NoError(t, nc.Flush())
		require.Eventually(t, func() bool { return info().LastSeq == uint64(n) }, 10*time.Second, time.Millisecond)
		st := info()
		require.LessOrEqual(t, st.Bytes, uint64(limit))
		if st.Msgs == uint64(n) {
			continue // within the limit every notice is kept
		}
		// One notice past the limit: the oldest went, the newest is kept.
		require.Greater(t, n, 2)
		_, err = s.GetLastMsgForSubject(ctx, subject(1))
		require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "the oldest notice was dropped")
		m, err := s.GetLastMsgForSubject(ctx, subject(n))
		require.NoError(t, err)
		require.Equal(t, subject(n), m.Subject)
		return
	}
}
