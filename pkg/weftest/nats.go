package weftest

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/boot/natsboot"
)

// NATS is an embedded nats-server with JetStream that belongs to one test:
// a random port, file storage in t.TempDir(). It shuts down when the test
// ends. Restart keeps the port and the store, as a real server restart does.
type NATS struct {
	t      testing.TB
	cfg    natsboot.Config
	server *server.Server
}

// NATSOption adjusts the embedded server.
type NATSOption func(*natsboot.Config)

// WithSyncAlways makes JetStream fsync every write before acking.
func WithSyncAlways() NATSOption { return func(c *natsboot.Config) { c.SyncAlways = true } }

// NewNATS starts an embedded server for t.
func NewNATS(t testing.TB, opts ...NATSOption) *NATS {
	t.Helper()
	cfg := natsboot.Config{StoreDir: t.TempDir(), Port: -1}
	for _, o := range opts {
		o(&cfg)
	}
	return startNATS(t, cfg)
}

// startNATS starts the server cfg describes and fixes cfg's client port to
// the one it got, so that Restart comes back on the same address.
func startNATS(t testing.TB, cfg natsboot.Config) *NATS {
	t.Helper()
	srv, err := natsboot.Start(cfg)
	if err != nil {
		t.Fatalf("weftest: start nats: %v", err)
	}
	cfg.Port = srv.Addr().(*net.TCPAddr).Port
	n := &NATS{t: t, cfg: cfg, server: srv}
	t.Cleanup(n.Stop)
	return n
}

// URL is the client URL of the server.
func (n *NATS) URL() string { return n.server.ClientURL() }

// Server returns the running server.
func (n *NATS) Server() *server.Server { return n.server }

// Stop shuts the server down and waits for it. Safe to call twice.
func (n *NATS) Stop() {
	if n.server != nil {
		n.server.Shutdown()
		n.server.WaitForShutdown()
	}
}

// Restart stops the server and starts it again on the same port and store.
func (n *NATS) Restart() {
	n.t.Helper()
	n.Stop()
	srv, err := natsboot.Start(n.cfg)
	if err != nil {
		n.t.Fatalf("weftest: restart nats: %v", err)
	}
	n.server = srv
}

// Conn connects a client that reconnects forever and buffers nothing while
// disconnected (a publish during an outage fails at once instead of being
// replayed later, out of order). It is closed when the test ends.
func (n *NATS) Conn(t testing.TB) *nats.Conn {
	t.Helper()
	return connect(t, n.URL())
}

// connect is Conn to url, which may list several servers.
func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url,
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectBufSize(-1),
	)
	if err != nil {
		t.Fatalf("weftest: connect nats: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream returns a JetStream context on a new connection from Conn.
func (n *NATS) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	return newJetStream(t, n.Conn(t))
}

func newJetStream(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("weftest: jetstream: %v", err)
	}
	return js
}

// NATSFromConf runs an embedded nats-server from the configuration file at
// path (its users, permissions and accounts), on a free loopback port,
// with a JetStream store of its own and no monitoring listener or signal
// handling, and shuts it down when t ends. It is how tests check
// deploy/nats.conf's permissions against a real server.
func NATSFromConf(t testing.TB, path string) *server.Server {
	t.Helper()
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("weftest: nats config %s: %v", path, err)
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.StoreDir = t.TempDir()
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("weftest: nats server from %s: %v", path, err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatalf("weftest: nats server from %s is not ready", path)
	}
	return srv
}
