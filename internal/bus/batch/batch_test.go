package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/bus/batch"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

const (
	waitFor = 30 * time.Second
	stream  = "BATCHTEST"
	durable = "batch-test"
)

// handler is a batch.Handler over messages' data: "bad" is undecodable,
// "skip" asks for no work, anything else is an item handle handles.
type handler struct {
	handle func(ctx context.Context, items []string, msgs []jetstream.Msg) ([]batch.Verdict, error)
}

func (handler) Decode(m jetstream.Msg) (string, bool, error) {
	switch d := string(m.Data()); d {
	case "bad":
		return "", false, errors.New("bad data")
	case "skip":
		return "", false, nil
	default:
		return d, true, nil
	}
}

func (h handler) Handle(ctx context.Context, items []string, msgs []jetstream.Msg) ([]batch.Verdict, error) {
	return h.handle(ctx, items, msgs)
}

// bundle is a stream with one consumer, whose AckWait outlasts the test
// (only a settlement redelivers), and the terminations it reports.
type bundle struct {
	js         jetstream.JetStream
	cons       jetstream.Consumer
	terminated chan uint64 // stream sequences, from the server's advisories
	logs       *weftest.Buffer
}

func setup(t *testing.T) *bundle {
	t.Helper()
	n := weftest.NewNATS(t)
	nc := n.Conn(t)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(t.Context(), jetstream.StreamConfig{Name: stream, Subjects: []string{"bt.>"}})
	require.NoError(t, err)
	cons, err := js.CreateConsumer(t.Context(), stream, jetstream.ConsumerConfig{
		Durable: durable, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour,
	})
	require.NoError(t, err)
	b := &bundle{js: js, cons: cons, terminated: make(chan uint64, 16), logs: &weftest.Buffer{}}
	sub, err := nc.Subscribe(server.JSAdvisoryConsumerMsgTerminatedPre+"."+stream+"."+durable, func(m *nats.Msg) {
		var adv server.JSConsumerDeliveryTerminatedAdvisory
		if err := json.Unmarshal(m.Data, &adv); err != nil {
			t.Errorf("advisory: %v", err)
			return
		}
		b.terminated <- adv.StreamSeq
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, nc.Flush())
	return b
}

// settler returns a Settler of h logging to b.logs, with a short
// RetryDelay so that naked messages come back within the test.
func (b *bundle) settler(h handler) *batch.Settler[string] {
	return batch.New[string](h, batch.Config{
		Name: "test", RetryDelay: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(b.logs, nil)),
	})
}

// deliver publishes data, one message each, and fetches them.
func (b *bundle) deliver(t *testing.T, data ...string) []jetstream.Msg {
	t.Helper()
	for i, d := range data {
		_, err := b.js.Publish(t.Context(), fmt.Sprintf("bt.%d", i), []byte(d))
		require.NoError(t, err)
	}
	return b.fetch(t, len(data))
}

// fetch waits for n deliveries.
func (b *bundle) fetch(t *testing.T, n int) []jetstream.Msg {
	t.Helper()
	batch, err := b.cons.Fetch(n, jetstream.FetchMaxWait(waitFor))
	require.NoError(t, err)
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	require.NoError(t, batch.Error())
	require.Len(t, msgs, n)
	return msgs
}

// terms terminates a sentinel message and returns the stream sequences
// terminated before it. The consumer settles in order, and the server
// sends its advisories in order: once the sentinel's advisory is in, every
// earlier settlement was processed, and the consumer holds nothing else
// unsettled, so nothing settled comes back.
func (b *bundle) terms(t *testing.T) []uint64 {
	t.Helper()
	_, err := b.js.Publish(t.Context(), "bt.sentinel", []byte("sentinel"))
	require.NoError(t, err)
	m := b.fetch(t, 1)[0]
	require.Equal(t, "sentinel", string(m.Data()), "nothing is redelivered")
	require.NoError(t, m.Term())
	sentinel := seq(t, m)
	var seqs []uint64
	deadline := time.After(waitFor)
	for {
		select {
		case s := <-b.terminated:
			if s != sentinel {
				seqs = append(seqs, s)
				continue
			}
			info, err := b.cons.Info(t.Context())
			require.NoError(t, err)
			require.Zero(t, info.NumAckPending, "every message is settled")
			require.Zero(t, info.NumPending)
			return seqs
		case <-deadline:
			t.Fatal("the sentinel's termination was not reported")
		}
	}
}

func seq(t *testing.T, m jetstream.Msg) uint64 {
	t.Helper()
	md, err := m.Metadata()
	require.NoError(t, err)
	return md.Sequence.Stream
}

func deliveries(t *testing.T, m jetstream.Msg) uint64 {
	t.Helper()
	md, err := m.Metadata()
	require.NoError(t, err)
	return md.NumDelivered
}

// An undecodable message is terminated and logged with its subject; one
// that asks for no work is acked. Neither reaches Handle, nor comes back.
func TestUndecodableIsTerminatedAndNoWorkAcked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msgs := b.deliver(t, "bad", "skip")
	b.settler(handler{handle: func(context.Context, []string, []jetstream.Msg) ([]batch.Verdict, error) {
		t.Error("Handle called without work")
		return nil, nil
	}}).Settle(t.Context(), msgs)
	require.Equal(t, []uint64{seq(t, msgs[0])}, b.terms(t), "the undecodable message alone is terminated")
	require.Contains(t, b.logs.String(), `level=ERROR msg="test: undecodable message terminated" subject=bt.0 err="bad data"`)
}

// Handle sees the items of the messages that ask for work, with those
// messages, and each is settled by its verdict: Ack and Term are not
// redelivered (Term is a termination), Nak is, after RetryDelay.
// BeforeAck runs once per Ack verdict, before the ack.
func TestVerdictsSettleEachMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msgs := b.deliver(t, "ack", "skip", "term", "nak")
	var beforeAck int
	s := batch.New[string](handler{handle: func(_ context.Context, items []string, held []jetstream.Msg) ([]batch.Verdict, error) {
		require.Equal(t, []string{"ack", "term", "nak"}, items)
		require.Equal(t, []jetstream.Msg{msgs[0], msgs[2], msgs[3]}, held)
		return []batch.Verdict{batch.Ack, batch.Term, batch.Nak}, nil
	}}, batch.Config{RetryDelay: time.Millisecond, BeforeAck: func() {
		beforeAck++
		info, err := b.cons.Info(t.Context())
		require.NoError(t, err)
		require.Positive(t, info.NumAckPending, "the message is not acked yet")
	}})
	s.Settle(t.Context(), msgs)
	require.Equal(t, 1, beforeAck, "BeforeAck runs for the Ack verdict alone")

	again := b.fetch(t, 1)
	require.Equal(t, "nak", string(again[0].Data()), "the naked message comes back")
	require.EqualValues(t, 2, deliveries(t, again[0]))
	require.NoError(t, again[0].Ack())
	require.Equal(t, []uint64{seq(t, msgs[2])}, b.terms(t), "the Term verdict terminates; the rest is acked")
}

// A Handle that fails, or returns a verdict short, has every message it
// held redelivered, and a warning logged; the message it never saw is not.
func TestHandleFailureRedeliversEveryMessage(t *testing.T) {
	t.Parallel()
	for name, handle := range map[string]func() ([]batch.Verdict, error){
		"error":          func() ([]batch.Verdict, error) { return []batch.Verdict{batch.Ack, batch.Ack}, errors.New("db down") },
		"verdicts short": func() ([]batch.Verdict, error) { return []batch.Verdict{batch.Ack}, nil },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			msgs := b.deliver(t, "one", "skip", "two")
			b.settler(handler{handle: func(context.Context, []string, []jetstream.Msg) ([]batch.Verdict, error) {
				return handle()
			}}).Settle(t.Context(), msgs)
			require.Contains(t, b.logs.String(), `level=WARN msg="test: batch failed; messages will be redelivered" messages=2`)

			again := b.fetch(t, 2)
			require.ElementsMatch(t, []string{"one", "two"}, []string{string(again[0].Data()), string(again[1].Data())})
			for _, m := range again {
				require.EqualValues(t, 2, deliveries(t, m))
				require.NoError(t, m.Ack())
			}
			require.Empty(t, b.terms(t))
		})
	}
}

// Handle's context outlives the end of Settle's: it is not cancelled with
// it, and it ends at AckWait (the default one when none is given).
func TestHandleContextSurvivesCancelAndEndsAtAckWait(t *testing.T) {
	t.Parallel()
	for name, ackWait := range map[string]time.Duration{"set": time.Hour, "default": 0} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			msgs := b.deliver(t, "one")
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			want := ackWait
			if want == 0 {
				want = batch.DefaultAckWait
			}
			before := time.Now()
			var deadline time.Time
			batch.New[string](handler{handle: func(ctx context.Context, _ []string, _ []jetstream.Msg) ([]batch.Verdict, error) {
				require.NoError(t, ctx.Err(), "Settle's context ended; Handle's did not")
				var ok bool
				deadline, ok = ctx.Deadline()
				require.True(t, ok, "Handle's context has a deadline")
				return []batch.Verdict{batch.Ack}, nil
			}}, batch.Config{AckWait: ackWait}).Settle(ctx, msgs)
			after := time.Now()
			require.False(t, deadline.Before(before.Add(want)), "the deadline is AckWait from the call")
			require.False(t, deadline.After(after.Add(want)), "the deadline is AckWait from the call")
			require.Empty(t, b.terms(t))
		})
	}
}

// A settlement that fails is logged once, with the message's subject.
func TestFailedSettlementIsLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msgs := b.deliver(t, "one")
	b.settler(handler{handle: func(_ context.Context, _ []string, held []jetstream.Msg) ([]batch.Verdict, error) {
		require.NoError(t, held[0].Ack()) // the Settler's own ack then fails
		return []batch.Verdict{batch.Ack}, nil
	}}).Settle(t.Context(), msgs)
	require.Equal(t, 1, strings.Count(b.logs.String(), `level=WARN msg="test: settling a message failed" subject=bt.0`), b.logs.String())
	require.Empty(t, b.terms(t))
}
