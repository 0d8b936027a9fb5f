package weftest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/boot/natsboot"
)

// NATSCluster is a JetStream cluster of nats-servers on loopback that
// belongs to one test. Each node is a process of its own (the test binary
// again, run by Main), with its own client, route and monitoring ports and
// its own store, so that Kill is a kill -9 of a real server process and
// Start brings it back on the same ports and store. Every node routes to
// every other. The nodes are killed when the test ends.
//
// A package that uses it must run its tests with Main (or MainWithChild).
type NATSCluster struct {
	t     testing.TB
	nodes []*clusterNode
}

type clusterNode struct {
	cfg  natsboot.Config
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// natsNodeEnv, in a process a NATSCluster starts, holds the
// natsboot.Config (JSON) of the node that process runs instead of tests.
const natsNodeEnv = "WEFT_TEST_NATS_NODE"

// clusterReady bounds the wait for a node to serve and for the cluster to
// be current.
const clusterReady = 30 * time.Second

// NewNATSCluster starts a cluster of size nodes and waits until every
// node reports JetStream current (WaitReady).
func NewNATSCluster(t testing.TB, size int) *NATSCluster {
	t.Helper()
	return NewNATSClusterStarting(t, size, size)
}

// NewNATSClusterStarting makes a cluster of size nodes but starts only the
// first started of them, a majority, and waits until they are current: a
// cluster still forming, whose other nodes Start brings in later.
func NewNATSClusterStarting(t testing.TB, size, started int) *NATSCluster {
	t.Helper()
	if started <= size/2 || started > size {
		t.Fatalf("weftest: a cluster of %d starts a majority of its nodes, not %d", size, started)
	}
	c := &NATSCluster{t: t}
	// A clustered JetStream server refuses to start without its routes,
	// so every node's ports are chosen before the first starts.
	routes := make([]string, size)
	for i := range size {
		cfg := natsboot.Config{
			StoreDir: t.TempDir(),
			Port:     FreePort(t),
			HTTPPort: FreePort(t),
			Name:     fmt.Sprintf("weft-n%d", i),
			Cluster:  &natsboot.Cluster{Name: "weft-test", Port: FreePort(t)},
		}
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", cfg.Cluster.Port)
		c.nodes = append(c.nodes, &clusterNode{cfg: cfg})
	}
	for i, n := range c.nodes {
		n.cfg.Cluster.Routes = without(routes, i)
		t.Cleanup(func() { c.Kill(i) })
		if i < started {
			c.Start(i)
		}
	}
	c.WaitReady()
	return c
}

func without(s []string, i int) []string {
	out := make([]string, 0, len(s)-1)
	out = append(out, s[:i]...)
	return append(out, s[i+1:]...)
}

// Size is the number of nodes, running or not.
func (c *NATSCluster) Size() int { return len(c.nodes) }

// Start starts node i's process, which must not be running, and waits
// until it serves its monitoring endpoint.
func (c *NATSCluster) Start(i int) {
	c.t.Helper()
	n := c.nodes[i]
	cfg, err := json.Marshal(n.cfg)
	if err != nil {
		c.t.Fatalf("weftest: nats node %d: %v", i, err)
	}
	n.cmd = exec.CommandContext(c.t.Context(), os.Args[0], "-test.run=^$") // killed when the test ends, if not before
	n.cmd.Env = append(os.Environ(), natsNodeEnv+"="+string(cfg))
	n.cmd.Stderr = os.Stderr
	if err := n.cmd.Start(); err != nil {
		c.t.Fatalf("weftest: start nats node %d: %v", i, err)
	}
	n.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(n.cmd, n.done)
	c.waitFor(func() bool { return n.get(c.t.Context(), "/varz", nil) == nil }, "node %d serves", i)
}

// Kill kills node i's process with SIGKILL and waits for it to exit; a
// node that is not running is left alone.
func (c *NATSCluster) Kill(i int) { c.signal(i, syscall.SIGKILL) }

// Stop stops node i gracefully (SIGTERM: the server shuts down, handing
// over the leaderships it holds) and waits for it to exit.
func (c *NATSCluster) Stop(i int) { c.signal(i, syscall.SIGTERM) }

func (c *NATSCluster) signal(i int, sig syscall.Signal) {
	n := c.nodes[i]
	if !c.Running(i) {
		return
	}
	_ = n.cmd.Process.Signal(sig)
	<-n.done
}

// Running reports whether node i's process is running.
func (c *NATSCluster) Running(i int) bool {
	n := c.nodes[i]
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

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
// group, as a running node reports it, or -1 while none does.
func (c *NATSCluster) MetaLeader(ctx context.Context) int {
	for i, n := range c.nodes {
		var jsz struct {
			Meta *struct {
				Leader string `json:"leader"`
			} `json:"meta_cluster"`
		}
		if !c.Running(i) || n.get(ctx, "/jsz", &jsz) != nil || jsz.Meta == nil {
			continue
		}
		return c.index(jsz.Meta.Leader)
	}
	return -1
}

// StreamLeader is the index of the node that leads stream, as js reports
// it, or -1 while there is none.
func (c *NATSCluster) StreamLeader(ctx context.Context, js jetstream.JetStream, stream string) int {
	s, err := js.Stream(ctx, stream)
	if err != nil || s.CachedInfo().Cluster == nil {
		return -1
	}
	return c.index(s.CachedInfo().Cluster.Leader)
}

// index is the index of the node named name, or -1.
func (c *NATSCluster) index(name string) int {
	for i, n := range c.nodes {
		if n.cfg.Name == name {
			return i
		}
	}
	return -1
}

// WaitReady waits until every running node reports itself healthy
// (/healthz: JetStream enabled and current with its meta group and its
// streams), and fails the test after clusterReady.
func (c *NATSCluster) WaitReady() {
	c.t.Helper()
	c.waitFor(func() bool {
		for i, n := range c.nodes {
			if c.Running(i) && n.get(c.t.Context(), "/healthz", nil) != nil {
				return false
			}
		}
		return c.MetaLeader(c.t.Context()) >= 0
	}, "the cluster is current")
}

func (c *NATSCluster) waitFor(ok func() bool, what string, args ...any) {
	c.t.Helper()
	deadline := time.Now().Add(clusterReady)
	for !ok() {
		if time.Now().After(deadline) {
			c.t.Fatalf("weftest: not true after %v: "+what, append([]any{clusterReady}, args...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get reads the node's monitoring endpoint path into out (nil: only the
// status); any status but 200 is an error.
func (n *clusterNode) get(ctx context.Context, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", n.cfg.HTTPPort, path), http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Conn connects a client to every node, as NATS.Conn does to one: it
// reconnects forever, to whichever node is up.
func (c *NATSCluster) Conn(t testing.TB) *nats.Conn {
	t.Helper()
	return connect(t, c.URLs())
}

// JetStream returns a JetStream context on a new connection from Conn;
// an API request without a deadline of its own waits up to
// clusterAPITimeout.
func (c *NATSCluster) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(c.Conn(t), jetstream.WithDefaultTimeout(clusterAPITimeout))
	if err != nil {
		t.Fatalf("weftest: jetstream: %v", err)
	}
	return js
}

// clusterAPITimeout bounds a JetStream API request of a cluster's
// JetStream without a deadline of its own. A clustered request (a stream
// created on three nodes, each a race-built process) on a loaded host
// takes longer than nats.go's 5 s default; the tests' set-up should not
// fail for it.
const clusterAPITimeout = 30 * time.Second

// runNATSNodeIfAsked runs a cluster node and exits when this process is
// one (natsNodeEnv is set), and returns at once otherwise.
func runNATSNodeIfAsked() {
	if cfg := os.Getenv(natsNodeEnv); cfg != "" {
		os.Exit(runNATSNode(cfg))
	}
}

// runNATSNode is the process of a cluster node: it runs the server cfg
// (JSON natsboot.Config) describes until SIGTERM, which shuts it down,
// and returns the process's exit code. SIGKILL ends it where it is.
func runNATSNode(cfg string) int {
	var c natsboot.Config
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintln(os.Stderr, "weftest: nats node:", err)
		return 1
	}
	srv, err := natsboot.Start(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "weftest: nats node:", err)
		return 1
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	<-stop
	srv.Shutdown()
	srv.WaitForShutdown()
	return 0
}
