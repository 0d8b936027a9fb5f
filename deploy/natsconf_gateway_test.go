package deploy

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// Issue 17, item 4: on a server from nats.conf, the gateway cannot answer
// a request on a stream's subject even when the caller names it as the
// reply (the server refuses the publish; no message reaches
// WEFT_RESULTS), and still answers the client on its inbox. Not parallel:
// loadNATSConf uses t.Setenv.
func TestGatewayAnswersOnInboxesOnly(t *testing.T) {
	srv := startConfServer(t)
	violations := make(chan string, 4)
	gw, err := nats.Connect(srv.ClientURL(), nats.UserInfo("gateway", "pw-gateway"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				violations <- err.Error()
			}
		}))
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	_, err = gw.QueueSubscribe("weft.signals.>", "weft-gateway", func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"accepted":true}`)) // as a gateway without the reply check would
	})
	require.NoError(t, err)
	require.NoError(t, gw.Flush())

	client, err := nats.Connect(srv.ClientURL(), nats.UserInfo("client", "pw-client"))
	require.NoError(t, err)
	t.Cleanup(client.Close)
	require.NoError(t, client.PublishRequest("weft.signals.r1", "weft.results.r1", []byte(`{}`)))
	require.NoError(t, client.Flush())
	select {
	case v := <-violations:
		require.Contains(t, v, "weft.results.r1")
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not refuse the gateway's answer on weft.results.r1")
	}

	// The answer to the client's inbox goes through, after the refused one
	// (one connection's publishes arrive in order): the stream has no
	// message from the refused one.
	reply, err := client.Request("weft.signals.r1", []byte(`{}`), 10*time.Second)
	require.NoError(t, err)
	require.Contains(t, string(reply.Data), "accepted")
	worker := connectAs(t, srv, "worker")
	st, err := worker.Stream(t.Context(), "WEFT_RESULTS")
	require.NoError(t, err)
	require.Zero(t, st.CachedInfo().State.Msgs, "nothing of the gateway's reached WEFT_RESULTS")
}
