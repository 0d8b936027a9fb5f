package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// The dev stack's NATS refuses a client without credentials, so that no
// local process reads callers' tokens on weft.signals.> or forges
// results; the URL the banner prints carries the developer's user and
// password, and approves a run over the gateway's NATS ingress as the
// README's tour does with the nats CLI.
func TestDevNATSRefusesStrangers(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	dev := startDev(t, db, "false")
	userURL := bannerURL(t, dev.out.String(), "NATS:")
	u, err := url.Parse(userURL)
	require.NoError(t, err)
	password, ok := u.User.Password()
	require.True(t, ok, "the banner's NATS URL has a password: %s", userURL)
	require.Equal(t, devNATSUser, u.User.Username())

	bare := *u
	bare.User = nil
	_, err = nats.Connect(bare.String(), nats.NoReconnect())
	require.ErrorIs(t, err, nats.ErrAuthorization, "no credentials")
	_, err = nats.Connect(bare.String(), nats.UserInfo(devServicesUser, password), nats.NoReconnect())
	require.ErrorIs(t, err, nats.ErrAuthorization, "the services' user with the developer's password")

	dir := devDir(t, dev)
	kept, err := os.ReadFile(filepath.Join(dir, devNATSPasswordFile))
	require.NoError(t, err)
	require.Equal(t, password, strings.TrimSpace(string(kept)), "the banner's password is the one in the data folder")
	require.Contains(t, dev.out.String(), "(user weft, password in "+filepath.Join(dir, devNATSPasswordFile)+")")

	approveOverNATS(t, db, bannerURL(t, dev.out.String(), "API:"), userURL, "weft_dev_test_token")
}

// devDir is the data folder of dev, from its banner.
func devDir(t *testing.T, dev *devStackUnderTest) string {
	t.Helper()
	return bannerURL(t, dev.out.String(), "Data:")
}

// approveOverNATS starts a run with an approval gate through the gateway's
// HTTP API, approves it with a request on weft.signals.<runId> over
// natsURL, with the token in a header as the nats CLI sends it, and waits
// for the run to complete.
func approveOverNATS(t *testing.T, db *weftest.DB, apiURL, natsURL, token string) {
	t.Helper()
	c, err := client.New(apiURL, client.WithToken(token))
	require.NoError(t, err)
	g := startGated(t, db, c)
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	defer nc.Close()
	subject, err := streams.SignalSubject(g.runID)
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = []byte(`{"signalName":"approve","signalId":"approve-1","payload":{"by":"nats"}}`)
	msg.Header.Set("Authorization", "Bearer "+token)
	reply, err := nc.RequestMsg(msg, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, "202", reply.Header.Get(gateway.HeaderStatus), "%s", reply.Data)
	g.waitFor(t, "the run approved over NATS completes", func(e events.Event) bool { return e.EventType == events.RunCompleted })
}

// The developer's NATS password is written once, mode 0600, and kept
// across restarts; the services' is new at every start.
func TestDevNATSPasswordIsKept(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "dev")
	services1, user1, err := devNATSUsers(dir)
	require.NoError(t, err)
	services2, user2, err := devNATSUsers(dir)
	require.NoError(t, err)
	require.Equal(t, user1, user2, "the developer's user survives a restart")
	require.NotEqual(t, services1.Password, services2.Password, "the services' password is drawn at each start")
	require.NotEqual(t, services1.Password, user1.Password)
	info, err := os.Stat(filepath.Join(dir, devNATSPasswordFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	require.Equal(t, "nats://weft:"+url.QueryEscape(user1.Password)+"@127.0.0.1:14222", userURL("127.0.0.1:14222", user1))
}

// A dev data folder whose streams were created with another P (the
// production default of 8, before weft dev made one) starts as it is:
// --partitions applies to new streams only.
func TestDevBusKeepsAnExistingFoldersPartitions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "dev")
	for i, partitions := range []int{8, devPartitions} {
		cfg := devConfig{dir: dir, natsPort: weftest.FreePort(t), partitions: partitions}
		bus, stops, err := devBus(t.Context(), cfg)
		require.NoError(t, err, "start %d", i+1)
		n, err := streams.Partitions(t.Context(), bus.js, streams.EventsStream)
		require.NoError(t, err)
		require.Equal(t, 8, n, "start %d", i+1)
		require.NoError(t, stopAll(t.Context(), 10*time.Second, time.Second, stops))
	}
}

// The dev stack's own connection to its embedded NATS is in-process, not
// a socket: its remote address is a pipe's. The listener still serves the
// developer's URL (TestDevNATSRefusesStrangers).
func TestDevBusConnectsInProcess(t *testing.T) {
	t.Parallel()
	cfg := devConfig{dir: filepath.Join(t.TempDir(), "dev"), natsPort: weftest.FreePort(t), partitions: devPartitions}
	bus, stops, err := devBus(t.Context(), cfg)
	t.Cleanup(func() { require.NoError(t, stopAll(context.Background(), 10*time.Second, time.Second, stops)) })
	require.NoError(t, err)
	require.Equal(t, "pipe", bus.nc.ConnectedAddr(), "the services' connection is in-process")
	subject, err := streams.EventSubject(uuid.NewString(), events.RunApproved)
	require.NoError(t, err)
	_, err = bus.js.Publish(t.Context(), subject, []byte("{}"))
	require.NoError(t, err, "and carries JetStream's publishes")
}
