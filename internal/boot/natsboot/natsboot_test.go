package natsboot_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/natsboot"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// start starts a server for t with users, shut down when t ends.
func start(t *testing.T, users ...natsboot.User) string {
	t.Helper()
	srv, err := natsboot.Start(natsboot.Config{StoreDir: t.TempDir(), Port: -1, Users: users})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv.ClientURL()
}

// With users, a connection without credentials or with a wrong password
// is refused, and each user connects and uses JetStream.
func TestUsersAreRequired(t *testing.T) {
	t.Parallel()
	url := start(t, natsboot.User{Name: "services", Password: "s3cret-1"}, natsboot.User{Name: "cli", Password: "s3cret-2"})

	_, err := nats.Connect(url, nats.NoReconnect())
	require.ErrorIs(t, err, nats.ErrAuthorization, "no credentials")
	_, err = nats.Connect(url, nats.UserInfo("cli", "s3cret-1"), nats.NoReconnect())
	require.ErrorIs(t, err, nats.ErrAuthorization, "another user's password")

	for _, u := range [][2]string{{"services", "s3cret-1"}, {"cli", "s3cret-2"}} {
		nc, err := nats.Connect(url, nats.UserInfo(u[0], u[1]))
		require.NoError(t, err, u[0])
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		_, err = js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "S_" + u[0], Subjects: []string{u[0] + ".>"}})
		require.NoError(t, err, "%s uses JetStream", u[0])
		nc.Close()
	}
}

// Without users any client connects, as the test harness needs.
func TestNoUsersNoAuth(t *testing.T) {
	t.Parallel()
	nc, err := nats.Connect(start(t))
	require.NoError(t, err)
	nc.Close()
}

// A user without a password is refused at start.
func TestUserNeedsAPassword(t *testing.T) {
	t.Parallel()
	_, err := natsboot.Start(natsboot.Config{StoreDir: t.TempDir(), Port: -1, Users: []natsboot.User{{Name: "cli"}}})
	require.ErrorContains(t, err, "needs a name and a password")
}
