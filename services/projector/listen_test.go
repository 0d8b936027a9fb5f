package projector_test

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/projector"
)

// listenProbe is the testing knobs of a projector whose LISTEN a test
// holds and watches: each connection attempt waits for a token on allow
// after saying so on connecting; each LISTEN established sends its
// backend pid on listening; each long poll that starts waiting says so on
// waiting.
type listenProbe struct {
	connecting chan struct{}
	allow      chan struct{}
	listening  chan uint32
	waiting    chan struct{}
}

func newListenProbe(t *testing.T) (*listenProbe, projector.TestingKnobs) {
	t.Helper()
	p := &listenProbe{connecting: make(chan struct{}, 8), allow: make(chan struct{}),
		listening: make(chan uint32, 8), waiting: make(chan struct{}, 8)}
	ctx := t.Context() // canceled before the projector is stopped
	return p, projector.TestingKnobs{
		BeforeListen: func() {
			p.connecting <- struct{}{}
			select {
			case <-p.allow:
			case <-ctx.Done():
			}
		},
		Listening:       func(pid uint32) { p.listening <- pid },
		LongPollWaiting: func() { p.waiting <- struct{}{} },
	}
}

// receive returns the next value of ch, failing the test after waitFor.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("no %s within %s", what, waitFor)
		var zero T
		return zero
	}
}

// twoProjectors starts a projector that applies the bus's events, and one
// on a JetStream of its own, which never carries an event: every change
// the second one sees is committed by the first. The second's long polls
// recheck once an hour, and its LISTEN is held by the probe it returns;
// s.url is the second's.
func (s *stack) twoProjectors(t *testing.T) *listenProbe {
	t.Helper()
	s.serveWith(t, projector.Config{}, nil)
	quiet := weftest.NewNATS(t)
	require.NoError(t, streams.Ensure(t.Context(), quiet.JetStream(t), streams.Config{MaxBytes: 64 << 20}))
	probe, knobs := newListenProbe(t)
	p, err := projector.New(s.db.Pool, quiet.Conn(t), config(t, projector.Config{MaxWait: 10 * time.Minute,
		WaitRecheck: time.Hour, ResyncLag: time.Hour, RetryDelay: 10 * time.Millisecond, TestingKnobs: knobs,
		Logger: slog.New(slog.NewJSONHandler(s.logs, nil))}))
	require.NoError(t, err)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return probe
}

// A long poll answers as soon as another projector commits the change it
// waits for: the commit's NOTIFY wakes it. Its projector never sees the
// event itself and rechecks only once an hour, so the answer can only
// come from the notification.
func TestLongPollWokenByAnotherProjector(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	probe := s.twoProjectors(t)
	receive(t, probe.connecting, "LISTEN attempt")
	probe.allow <- struct{}{}
	receive(t, probe.listening, "LISTEN")
	runID := s.approve(t, "notify")
	s.waitRun(t, runID, atSeq(1), "approved by the other projector")

	answer := s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=2&timeout=10m")
	receive(t, probe.waiting, "long poll waiting")
	s.appendBus(t, lifecycle(t, runID)[:1]...)
	r := receive(t, answer, "long poll's answer")
	require.NoError(t, r.err)
	var v api.RunView
	r.decode(t, &v)
	require.Equal(t, int64(2), v.LastEventSeq)
}

// A change committed while a projector's LISTEN connection is down (here
// terminated by the server) still wakes its long polls: the reconnected
// LISTEN wakes every poll to recheck. Until then the poll waits, as
// nothing else can wake it within the hour.
func TestLongPollWokenAfterListenLoss(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	probe := s.twoProjectors(t)
	receive(t, probe.connecting, "LISTEN attempt")
	probe.allow <- struct{}{}
	pid := receive(t, probe.listening, "LISTEN")
	runID := s.approve(t, "notify")
	s.waitRun(t, runID, atSeq(1), "approved by the other projector")
	answer := s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=2&timeout=10m")
	receive(t, probe.waiting, "long poll waiting")

	var terminated bool
	require.NoError(t, s.db.Pool.QueryRow(t.Context(), "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&terminated))
	require.True(t, terminated)
	receive(t, probe.connecting, "LISTEN reconnection") // the old connection is gone
	s.appendBus(t, lifecycle(t, runID)[:1]...)
	s.waitRun(t, runID, atSeq(2), "committed by the other projector")
	requireWaiting(t, answer)

	probe.allow <- struct{}{}
	require.NotEqual(t, pid, receive(t, probe.listening, "LISTEN again"))
	r := receive(t, answer, "long poll's answer")
	require.NoError(t, r.err)
	var v api.RunView
	r.decode(t, &v)
	require.Equal(t, int64(2), v.LastEventSeq)
	requireLogged(t, s, "LISTEN for other projectors' commits lost")
}
