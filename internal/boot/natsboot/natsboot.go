// Package natsboot runs an embedded nats-server with JetStream, for `weft dev`
// and the test harness. Production deployments run a real nats-server
// (deploy/compose.yaml); nothing here is needed there.
package natsboot

import (
	"cmp"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Config describes an embedded server. StoreDir is required.
type Config struct {
	// StoreDir holds JetStream's file store. Required.
	StoreDir string
	// Host defaults to 127.0.0.1.
	Host string
	// Port; -1 picks a free port, 0 means 4222.
	Port int
	// SyncAlways fsyncs every JetStream write before the ack
	// (sync_interval: always). Off, the server's periodic sync applies.
	// Weft is correct either way; see DESIGN.md "The bus is a transport".
	SyncAlways bool
	// ReadyTimeout bounds the wait for the server to accept connections.
	ReadyTimeout time.Duration
	// Users, when not empty, are the only clients the server accepts: a
	// connection without a user and password of one of them is refused.
	// Empty, any client may connect (the test harness).
	Users []User
	// HTTPPort, when not 0, serves the server's monitoring endpoints
	// (/healthz, /jsz) on Host.
	HTTPPort int
	// Name is the server's name, unique in a cluster. Default
	// "weft-embedded".
	Name string
	// Cluster, when set, makes the server a node of a JetStream cluster.
	Cluster *Cluster
}

// Cluster places an embedded server in a cluster of embedded servers on
// loopback, the way the test harness runs a 3-node JetStream cluster on
// one machine. Every node needs a distinct Config.Name and StoreDir.
type Cluster struct {
	// Name is the cluster's name, the same on every node. Required.
	Name string
	// Port is the route listener's port; -1 picks a free one.
	Port int
	// Routes are the route URLs (nats-route://127.0.0.1:PORT) of the
	// other nodes. A node learns the rest of the cluster from any one.
	Routes []string
}

// User is a NATS user of an embedded server, allowed everything.
type User struct {
	// Name and Password are required; Password should come from a random
	// source (auth.GenerateToken).
	Name, Password string
}

// Start starts the server and waits until it accepts connections.
func Start(cfg Config) (*server.Server, error) {
	if cfg.StoreDir == "" {
		return nil, fmt.Errorf("natsboot: StoreDir is required")
	}
	users, err := serverUsers(cfg.Users)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: cmp.Or(cfg.Name, "weft-embedded"),
		Host:       cmp.Or(cfg.Host, "127.0.0.1"),
		Port:       cmp.Or(cfg.Port, 4222),
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		SyncAlways: cfg.SyncAlways,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
		HTTPHost:   cmp.Or(cfg.Host, "127.0.0.1"),
		HTTPPort:   cfg.HTTPPort,
		Users:      users,
	}
	if err := clusterOptions(opts, cfg.Cluster); err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsboot: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(cmp.Or(cfg.ReadyTimeout, 10*time.Second)) {
		srv.Shutdown()
		return nil, fmt.Errorf("natsboot: server on %s:%d not ready (port taken?)", opts.Host, opts.Port)
	}
	return srv, nil
}

// clusterOptions sets opts' cluster listener and routes from c; nil
// leaves a standalone server.
func clusterOptions(opts *server.Options, c *Cluster) error {
	if c == nil {
		return nil
	}
	if c.Name == "" {
		return fmt.Errorf("natsboot: Cluster.Name is required")
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: opts.Host, Port: c.Port}
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil {
			return fmt.Errorf("natsboot: route %q: %w", r, err)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// serverUsers checks users and returns them as the server's options.
func serverUsers(users []User) ([]*server.User, error) {
	var out []*server.User
	for i, u := range users {
		if u.Name == "" || u.Password == "" {
			return nil, fmt.Errorf("natsboot: user %d needs a name and a password", i)
		}
		out = append(out, &server.User{Username: u.Name, Password: u.Password})
	}
	return out, nil
}
