package weftest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/boot/natsboot"
)

// NATSCluster is a JetStream cluster of embedded nats-servers on loopback
// that belongs to one test: each node has its own client port, route port
// and store, and every node routes to every other, so a killed node that
// restarts rejoins whichever nodes are up. It shuts down when the test
// ends.
type NATSCluster struct {
	t     testing.TB
	nodes []*NATS
}

// clusterReady bounds the wait for a cluster to elect its leaders.
const clusterReady = 30 * time.Second

// NewNATSCluster starts a cluster of size nodes and waits until its
// JetStream meta group has a leader that every node follows.
func NewNATSCluster(t testing.TB, size int) *NATSCluster {
	t.Helper()
	c := &NATSCluster{t: t}
	// A clustered JetStream server refuses to start without its routes,
	// so every node's route port is chosen before the first starts.
	routes := make([]string, size)
	ports := make([]int, size)
	for i := range size {
		ports[i] = FreePort(t)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i])
	}
	for i := range size {
		c.nodes = append(c.nodes, startNATS(t, natsboot.Config{
			StoreDir: t.TempDir(),
			Port:     -1,
			Name:     fmt.Sprintf("weft-n%d", i),
			Cluster:  &natsboot.Cluster{Name: "weft-test", Port: ports[i], Routes: without(routes, i)},
		}))
	}
	c.WaitReady()
	return c
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

func without(s []string, i int) []string {
	out := make([]string, 0, len(s)-1)
	out = append(out, s[:i]...)
	return append(out, s[i+1:]...)
}

// FreePort returns a loopback port that nothing listens on now, for a
// server that must know its port before it starts (a cluster's routes).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("weftest: free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// Size is the number of nodes, running or not.
func (c *NATSCluster) Size() int { return len(c.nodes) }

// Node returns node i; Stop and Restart kill and restart it.
func (c *NATSCluster) Node(i int) *NATS { return c.nodes[i] }

// URLs are the client URLs of every node, comma-separated, the form
// nats.Connect and every Weft service's --nats-url take.
func (c *NATSCluster) URLs() string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", n.cfg.Port)
	}
	return strings.Join(urls, ",")
}

// MetaLeader is the index of the node that leads the JetStream meta
// group, or -1 while there is none.
func (c *NATSCluster) MetaLeader() int {
	for i, n := range c.nodes {
		if n.server.Running() && n.server.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// StreamLeader is the index of the node that leads stream (of the default
// account), or -1 while there is none.
func (c *NATSCluster) StreamLeader(stream string) int {
	for i, n := range c.nodes {
		if n.server.Running() && n.server.JetStreamIsStreamLeader("$G", stream) {
			return i
		}
	}
	return -1
}

// WaitReady waits until the meta group has a leader and every running
// node is current with it, and fails the test after clusterReady.
func (c *NATSCluster) WaitReady() {
	c.t.Helper()
	deadline := time.Now().Add(clusterReady)
	for !c.ready() {
		if time.Now().After(deadline) {
			c.t.Fatalf("weftest: the NATS cluster has no JetStream meta leader after %v", clusterReady)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *NATSCluster) ready() bool {
	if c.MetaLeader() < 0 {
		return false
	}
	for _, n := range c.nodes {
		if n.server.Running() && !n.server.JetStreamIsCurrent() {
			return false
		}
	}
	return true
}

// Conn connects a client to every node, as NATS.Conn does to one: it
// reconnects forever, to whichever node is up.
func (c *NATSCluster) Conn(t testing.TB) *nats.Conn {
	t.Helper()
	return connect(t, c.URLs())
}

// JetStream returns a JetStream context on a new connection from Conn.
func (c *NATSCluster) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	return newJetStream(t, c.Conn(t))
}
