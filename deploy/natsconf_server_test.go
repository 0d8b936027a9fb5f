package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// refusedWithin bounds a call nats-server is expected to refuse: a
// permission violation on a request answers nothing, so the call ends at
// this deadline with an error.
const refusedWithin = 2 * time.Second

// startConfServer runs an embedded nats-server from nats.conf, as parsed by
// loadNATSConf, on a free loopback port with a store of its own and no
// monitoring listener, with Weft's streams created by the migrate user.
func startConfServer(t *testing.T) *server.Server {
	t.Helper()
	loadNATSConf(t) // sets the users' passwords
	srv := weftest.NATSFromConf(t, "nats.conf")
	js := connectAs(t, srv, "migrate")
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{}))
	return srv
}

// connectAs connects to srv as user, with the reply prefix the services use
// (cmd/weft connectNATS), and returns its JetStream context.
func connectAs(t *testing.T, srv *server.Server, user string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, "pw-"+user),
		nats.CustomInboxPrefix("_INBOX_"+user))
	require.NoError(t, err, user)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// The relay reads the account's info ($JS.API.INFO) to tell a subject no
// stream captures from JetStream being down (docs/outbox.md, "Failures"):
// a real server from nats.conf must answer it, and still refuse the relay
// what its service never does. Not parallel: loadNATSConf uses t.Setenv.
func TestRelayMayReadAccountInfoAndNothingMore(t *testing.T) {
	srv := startConfServer(t)
	relay := connectAs(t, srv, "relay")
	ctx := t.Context()

	info, err := relay.AccountInfo(ctx)
	require.NoError(t, err, "the relay reads the account's info")
	require.Equal(t, len(streams.All(streams.Config{})), info.Streams)

	_, err = relay.Publish(ctx, "weft.events.r1", []byte("{}"))
	require.NoError(t, err, "the relay publishes events")

	refused := func(what string, call func(context.Context) error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, refusedWithin)
		defer cancel()
		require.Error(t, call(cctx), "the relay may not %s", what)
	}
	refused("delete a stream", func(c context.Context) error { return relay.DeleteStream(c, streams.EventsStream) })
	refused("create a consumer", func(c context.Context) error {
		_, err := relay.CreateOrUpdateConsumer(c, streams.EventsStream, jetstream.ConsumerConfig{Durable: "sneaky"})
		return err
	})
	refused("publish results", func(c context.Context) error {
		_, err := relay.Publish(c, "weft.results.r1", []byte("{}"))
		return err
	})

	// The services that do not need it are not given it.
	worker := connectAs(t, srv, "worker")
	cctx, cancel := context.WithTimeout(ctx, refusedWithin)
	defer cancel()
	_, err = worker.AccountInfo(cctx)
	require.Error(t, err, "the worker does not read the account's info")
}
