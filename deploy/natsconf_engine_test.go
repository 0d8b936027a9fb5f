package deploy

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
)

// lookupAnswer is what the stand-in engine answers every lookup with.
const lookupAnswer = `{"schemaVersion":1}`

// connectReporting connects to srv as user, as connectAs does, and returns
// the connection with the errors the server reports to it asynchronously
// (a permission violation on a publish or a subscription among them).
func connectReporting(t *testing.T, srv *server.Server, user string) (*nats.Conn, <-chan error) {
	t.Helper()
	errs := make(chan error, 16)
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, "pw-"+user),
		nats.CustomInboxPrefix("_INBOX_"+user),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	require.NoError(t, err, user)
	t.Cleanup(nc.Close)
	return nc, errs
}

// answerLookups serves reconciliation lookups on nc, the engine's
// connection, in the engine's queue group, and answers each on its reply
// subject whatever that is: an engine without its own reply check
// (engine.Config.ReconcileReplyPrefixes), so that the server's permissions
// alone stand between an answer and the subject a lookup names. It returns
// the reply subjects answered, in order; the answer is in nc's buffer when
// its subject is sent.
func answerLookups(t *testing.T, nc *nats.Conn) <-chan string {
	t.Helper()
	answered := make(chan string, 16)
	sub, err := nc.QueueSubscribe(streams.ReconcileSubject, streams.ReconcileQueue, func(m *nats.Msg) {
		if err := m.Respond([]byte(lookupAnswer)); err != nil {
			answered <- "respond failed: " + err.Error()
			return
		}
		answered <- m.Reply
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return answered
}

// next returns the next value of ch, failing the test after refusedWithin.
func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(refusedWithin):
		require.FailNow(t, "nothing came", what)
		var zero T
		return zero
	}
}

// requireViolation waits for the server's report of a permission
// violation on subject (or a subject starting with it) to the connection
// errs is of.
func requireViolation(t *testing.T, errs <-chan error, subject string) {
	t.Helper()
	err := next(t, errs, "a permission violation on "+subject)
	require.ErrorIs(t, err, nats.ErrPermissionViolation)
	require.ErrorContains(t, err, `"`+subject, "the violation names %s", subject)
}

// Issue 36, finding 1: a lookup names its own reply subject, and a worker
// may make lookups. Even an engine that answered every reply subject could
// not put its answer on a cancel notice's subject (a cancelled run's
// activity would run), on another tenant's run's events, or on the
// JetStream API (a purge with the engine's rights): nats.conf allows the
// engine's answers on the workers' inboxes only, not allow_responses. On a
// real server from nats.conf, each answer is refused and reported to the
// engine, and none reaches its subject. Not parallel: t.Setenv.
func TestEngineCannotAnswerALookupOnANamedSubject(t *testing.T) {
	srv := startConfServer(t)
	ctx := t.Context()
	engine, engineErrs := connectReporting(t, srv, "engine")
	answered := answerLookups(t, engine)
	worker := connectAs(t, srv, "worker")
	relay := connectAs(t, srv, "relay")

	const cancelSubject = "weft.cancel.r-cancelled"
	notices, err := worker.Conn().SubscribeSync(cancelSubject)
	require.NoError(t, err, "the worker hears cancel notices")
	require.NoError(t, worker.Conn().Flush())

	for _, target := range []string{cancelSubject, "weft.events.t2.r2", "$JS.API.STREAM.PURGE." + streams.ResultsStream} {
		require.NoError(t, worker.Conn().PublishRequest(streams.ReconcileSubject, target, []byte(`{}`)),
			"the worker names %s as its lookup's reply", target)
		require.Equal(t, target, next(t, answered, "the lookup reaches the engine"))
		require.NoError(t, engine.Flush())
		requireViolation(t, engineErrs, target)
	}

	// Nothing of the engine's came before a message published after the
	// refusals: one server keeps each subscriber's and each stream's order.
	// The JetStream API answers from a pool of goroutines, in no order, and
	// Weft's streams deny purges anyway: the refusal above is the proof
	// that no answer reached it.
	sentinel := []byte(`{"sentinel":true}`)
	ack, err := relay.Publish(ctx, cancelSubject, sentinel)
	require.NoError(t, err)
	require.Equal(t, uint64(1), ack.Sequence, "WEFT_CANCELS holds no answer of the engine's")
	notice, err := notices.NextMsg(refusedWithin)
	require.NoError(t, err)
	require.Equal(t, sentinel, notice.Data, "the worker hears no answer on the cancel subject")
	ack, err = relay.Publish(ctx, "weft.events.t2.r2", sentinel)
	require.NoError(t, err)
	require.Equal(t, uint64(1), ack.Sequence, "WEFT_EVENTS holds no answer of the engine's")
}

// The other side of the same permission: a worker's lookup with its own
// inbox as the reply (nats.go's Request, reply prefix _INBOX_worker) is
// answered, on a real server from nats.conf. Not parallel: t.Setenv.
func TestEngineAnswersALookupOnTheWorkersInbox(t *testing.T) {
	srv := startConfServer(t)
	engine, engineErrs := connectReporting(t, srv, "engine")
	answered := answerLookups(t, engine)
	worker := connectAs(t, srv, "worker")

	reply, err := worker.Conn().Request(streams.ReconcileSubject, []byte(`{}`), refusedWithin)
	require.NoError(t, err, "the worker's lookup is answered")
	require.Equal(t, lookupAnswer, string(reply.Data))
	require.True(t, strings.HasPrefix(next(t, answered, "the engine answered"), "_INBOX_worker."), "on the worker's inbox")
	require.Empty(t, engineErrs, "the server reported nothing to the engine")
}

// A worker of another queue (user worker-batch, inbox _INBOX_worker-batch,
// added as nats.conf says, its inbox in the engine's publish allow among
// it) has its lookups answered, and the default queue's worker cannot
// read them: its _INBOX_worker.> does not match _INBOX_worker-batch.…,
// another first token, and the server refuses it a subscription there.
// Not parallel: t.Setenv.
func TestQueueWorkerLookupIsAnsweredInItsInboxOnly(t *testing.T) {
	srv := startQueueServer(t)
	engine, engineErrs := connectReporting(t, srv, "engine")
	answered := answerLookups(t, engine)
	batch := connectAs(t, srv, "worker-batch")

	reply, err := batch.Conn().Request(streams.ReconcileSubject, []byte(`{}`), refusedWithin)
	require.NoError(t, err, "the lookup of the worker of batch is answered")
	require.Equal(t, lookupAnswer, string(reply.Data))
	require.True(t, strings.HasPrefix(next(t, answered, "the engine answered"), "_INBOX_worker-batch."))
	require.Empty(t, engineErrs)

	def, defErrs := connectReporting(t, srv, "worker")
	_, err = def.SubscribeSync("_INBOX_worker-batch.>")
	require.NoError(t, err)
	require.NoError(t, def.Flush())
	requireViolation(t, defErrs, "_INBOX_worker-batch.>")
	_, err = def.SubscribeSync("_INBOX_worker.>")
	require.NoError(t, err)
	require.NoError(t, def.Flush())
	require.Empty(t, defErrs, "its own inbox it may read")
}

// The copy of the worker's block alone is not enough: without its inbox
// in the engine's publish allow, the server refuses the engine's answers
// to the worker of batch, which gets none. Not parallel: t.Setenv.
func TestQueueWorkerInboxMustBeInTheEnginesAllow(t *testing.T) {
	full := queueWorkerConf(t, "batch")
	conf := strings.Replace(full, `, "_INBOX_worker-batch.>"`, "", 1)
	require.NotEqual(t, full, conf, "the engine's allow of the inbox of batch removed")
	srv := startQueueServerFrom(t, conf)
	engine, engineErrs := connectReporting(t, srv, "engine")
	answered := answerLookups(t, engine)
	batch := connectAs(t, srv, "worker-batch")

	_, err := batch.Conn().Request(streams.ReconcileSubject, []byte(`{}`), refusedWithin)
	require.ErrorIs(t, err, nats.ErrTimeout, "no answer reaches the worker of batch")
	require.True(t, strings.HasPrefix(next(t, answered, "the engine answered"), "_INBOX_worker-batch."))
	requireViolation(t, engineErrs, "_INBOX_worker-batch.")
}
