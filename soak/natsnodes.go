package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/streams"
)

// natsNode is one nats-server process of the topology: the one server, or
// a node of a JetStream cluster. A restart reuses its ports and store.
type natsNode struct {
	proc  *proc
	name  string // its server_name
	addr  string // clients
	mon   string // monitoring (/healthz, /jsz)
	route string // the cluster's routes; "" for a server of its own
}

// natsURL returns the URL list of every node for user, as the services
// take it: they connect to any node and move to another when it goes.
func (t *topology) natsURL(user string) string {
	urls := make([]string, len(t.nats))
	for i, n := range t.nats {
		urls[i] = "nats://" + user + ":pw-" + user + "@" + n.addr
	}
	return strings.Join(urls, ",")
}

// replicasEnv sets each stream's replicas to the number of nodes.
func (t *topology) replicasEnv() string {
	return "WEFT_STREAM_REPLICAS=" + strconv.Itoa(len(t.nats))
}

// natsNodeOf returns the node p runs, or nil when p is a service.
func (t *topology) natsNodeOf(p *proc) *natsNode {
	for _, n := range t.nats {
		if n.proc == p {
			return n
		}
	}
	return nil
}

// startNATS starts size nodes (1: one server; 3 or 5: a cluster, every
// node routing to the others) on the soak's ports and stores, and waits
// until each reports itself healthy (with a cluster: a meta leader, and
// the node current with it).
func startNATS(ctx context.Context, t *topology, size int, rng *rand.Rand) error {
	for i := range size {
		n := &natsNode{name: "weft-nats"}
		if size > 1 {
			n.name = fmt.Sprintf("weft-nats-%d", i+1)
		}
		addrs := []*string{&n.addr, &n.mon}
		if size > 1 {
			addrs = append(addrs, &n.route)
		}
		for _, addr := range addrs {
			var err error
			if *addr, err = freeAddr(ctx, rng); err != nil {
				return err
			}
		}
		t.nats = append(t.nats, n)
	}
	for _, n := range t.nats {
		if err := n.start(ctx, t); err != nil {
			return err
		}
	}
	for _, n := range t.nats {
		if err := n.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// start writes the node's configuration and starts its process.
func (n *natsNode) start(ctx context.Context, t *topology) error {
	conf, err := natsConf(t, n)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(n.addr)
	_, mport, _ := net.SplitHostPort(n.mon)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, u := range natsUsers {
		env = append(env, "WEFT_NATS_"+strings.ToUpper(u)+"_PASSWORD=pw-"+u)
	}
	n.proc = t.procs.add(&proc{name: n.name, kind: "nats", dir: t.dir, env: env,
		path: filepath.Join(t.dir, "nats-server"), args: []string{"-c", conf, "-a", "127.0.0.1", "-p", port, "-m", mport}})
	return n.proc.start(ctx)
}

// wait waits until the node answers healthy: JetStream enabled and, in a
// cluster, current with its meta group and its streams.
func (n *natsNode) wait(ctx context.Context) error {
	return waitHTTP(ctx, n.proc, "http://"+n.mon+"/healthz", 2*time.Minute)
}

// natsConf writes deploy/nats.conf for node n, with its name and store,
// an admin user "soak" (for the injector), and, in a cluster, its routes
// to every other node, and returns its path.
func natsConf(t *topology, n *natsNode) (string, error) {
	conf, err := os.ReadFile(filepath.Join(t.root, "deploy/nats.conf"))
	if err != nil {
		return "", fmt.Errorf("nats.conf: %w", err)
	}
	s := string(conf)
	for _, want := range []string{"store_dir: /data", "users: [", "server_name: weft-nats\n"} {
		if strings.Count(s, want) != 1 {
			return "", fmt.Errorf("deploy/nats.conf: expected one %q", want)
		}
	}
	store := filepath.Join(t.dir, n.name+"-store")
	s = strings.Replace(s, "store_dir: /data", "store_dir: "+strconv.Quote(store), 1)
	s = strings.Replace(s, "users: [", "users: [\n      { user: soak, password: pw-soak }", 1)
	s = strings.Replace(s, "server_name: weft-nats\n", "server_name: "+n.name+"\n", 1)
	if n.route != "" {
		s += clusterBlock(t, n)
	}
	path := filepath.Join(t.dir, n.name+".conf")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		return "", fmt.Errorf("nats.conf: %w", err)
	}
	return path, nil
}

// clusterBlock is node n's cluster configuration: its route listener and
// a route to every other node.
func clusterBlock(t *topology, n *natsNode) string {
	var routes []string
	for _, o := range t.nats {
		if o != n {
			routes = append(routes, strconv.Quote("nats-route://"+o.route))
		}
	}
	return fmt.Sprintf("\ncluster {\n  name: weft-soak\n  listen: %s\n  routes: [%s]\n}\n", n.route, strings.Join(routes, ", "))
}

// Roles of a cluster node, killed in this order by successive "nats"
// faults: the node that leads WEFT_EVENTS, the meta leader, a follower.
var natsRoles = []string{"events-leader", "meta-leader", "follower"}

// natsVictim chooses the node the k-th "nats" fault kills: the one server,
// or in a cluster the node of role natsRoles[k mod 3] as the cluster
// reports it now; it returns the node and a name for the summary.
func (in *injector) natsVictim(ctx context.Context, k int) (*natsNode, string, error) {
	top := in.top
	if len(top.nats) == 1 {
		return top.nats[0], top.nats[0].name, nil
	}
	role := natsRoles[k%len(natsRoles)]
	meta, events, err := top.natsLeaders(ctx)
	if err != nil {
		return nil, role, err
	}
	for _, n := range top.nats {
		switch {
		case role == "events-leader" && n.name == events,
			role == "meta-leader" && n.name == meta,
			role == "follower" && n.name != meta && n.name != events && n.proc.alive():
			return n, n.name + " (" + role + ")", nil
		}
	}
	return nil, role, fmt.Errorf("no %s: meta leader %q, WEFT_EVENTS leader %q", role, meta, events)
}

// natsLeaders returns the names of the nodes that lead the meta group and
// WEFT_EVENTS, as the cluster reports them.
func (t *topology) natsLeaders(ctx context.Context) (meta, events string, err error) {
	nc, err := nats.Connect(t.natsURL("soak"), nats.Name("weft-soak"))
	if err != nil {
		return "", "", fmt.Errorf("connect as soak: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return "", "", err
	}
	s, err := js.Stream(ctx, streams.EventsStream)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", streams.EventsStream, err)
	}
	if c := s.CachedInfo().Cluster; c != nil {
		events = c.Leader
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	for _, n := range t.nats {
		if meta, err = n.metaLeader(ctx, hc); err == nil && meta != "" {
			return meta, events, nil
		}
	}
	return "", events, errors.Join(errors.New("no node reports a meta leader"), err)
}

// metaLeader asks the node's /jsz which node leads the meta group.
func (n *natsNode) metaLeader(ctx context.Context, hc *http.Client) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.mon+"/jsz", http.NoBody)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var jsz struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jsz); err != nil || jsz.Meta == nil {
		return "", errors.Join(errors.New(n.name+": /jsz has no meta_cluster"), err)
	}
	return jsz.Meta.Leader, nil
}
