package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/boot/natsboot"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/streams"
)

// The embedded NATS of `weft dev` accepts two users and nobody else
// (docs/security.md, "weft dev"):
//   - devServicesUser is the stack's own connection. Its password is drawn
//     at each start and never leaves the process.
//   - devNATSUser is the developer's: the `nats` CLI, or `weft worker
//     --nats-url`. Its password is in <dir>/nats-password (mode 0600),
//     created at the first start and reused after, and the banner prints
//     the URL with it.
const (
	devServicesUser     = "weft-dev"
	devNATSUser         = "weft"
	devNATSPasswordFile = "nats-password"
)

// devBusConn is the dev stack's connection to its embedded NATS, the
// URL, with devNATSUser's password, that the banner prints, and the same
// without credentials.
type devBusConn struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	userURL string
	url     string
}

// devBus starts the embedded NATS server with the dev stack's users,
// connects to it and ensures Weft's streams. It returns the stop functions
// of what it started, in start order, also on error.
//
// The services' connection is in-process (nats.InProcessServer): the
// server and its clients share this process, and over loopback TCP every
// publish, ack and delivery would cost a system call and a wake-up on each
// side (BENCHMARKS.md measures the difference). The developer's URL still
// reaches the server over TCP.
func devBus(ctx context.Context, cfg devConfig) (devBusConn, []func(context.Context) error, error) {
	var stops []func(context.Context) error
	services, user, err := devNATSUsers(cfg.dir)
	if err != nil {
		return devBusConn{}, stops, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.natsPort))
	if err := addrFree(ctx, "NATS port", addr, "--nats-port / WEFT_DEV_NATS_PORT"); err != nil {
		return devBusConn{}, stops, err
	}
	ns, err := natsboot.Start(natsboot.Config{
		StoreDir:   filepath.Join(cfg.dir, "nats"),
		Port:       cfg.natsPort,
		SyncAlways: cfg.syncAlways,
		Users:      []natsboot.User{services, user},
	})
	if err != nil {
		return devBusConn{}, stops, err
	}
	stops = append(stops, func(context.Context) error { ns.Shutdown(); ns.WaitForShutdown(); return nil })
	bus := devBusConn{userURL: userURL(ns.Addr().String(), user), url: "nats://" + ns.Addr().String()}
	bus.nc, err = nats.Connect(ns.ClientURL(), nats.InProcessServer(ns),
		nats.UserInfo(services.Name, services.Password), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1))
	if err != nil {
		return bus, stops, fmt.Errorf("connect to embedded nats: %w", err)
	}
	stops = append(stops, func(context.Context) error { return bus.nc.Drain() })
	if bus.js, err = jetstream.New(bus.nc); err != nil {
		return bus, stops, fmt.Errorf("jetstream: %w", err)
	}
	partitions := cfg.partitions
	if _, err := streams.Partitions(ctx, bus.js, streams.EventsStream); err == nil {
		partitions = 0 // a data folder's partitioned streams keep their P
	}
	if err := streams.Ensure(ctx, bus.js, streams.Config{Partitions: partitions}); err != nil {
		return bus, stops, err
	}
	return bus, stops, nil
}

// devPartitions is the partitions of a new dev stack's streams: one, for
// its one engine. Each partition is two durable consumers, and the
// embedded server writes each busy consumer's state file up to ten times a
// second, so the production default of 8 would cost a one-engine stack
// throughput for nothing.
const devPartitions = 1

// devNATSUsers returns the dev stack's two NATS users: the services' with
// a fresh password, and the developer's with the password kept in
// <dir>/nats-password, written (mode 0600) when missing.
func devNATSUsers(dir string) (services, user natsboot.User, err error) {
	servicesPassword, err := auth.GenerateToken()
	if err != nil {
		return services, user, fmt.Errorf("dev NATS password: %w", err)
	}
	userPassword, _, err := auth.LoadOrCreateDevToken(filepath.Join(dir, devNATSPasswordFile), "")
	if err != nil {
		return services, user, fmt.Errorf("dev NATS password: %w", err)
	}
	return natsboot.User{Name: devServicesUser, Password: servicesPassword},
		natsboot.User{Name: devNATSUser, Password: userPassword}, nil
}

// userURL returns the URL nats://<name>:<password>@<hostPort> of u,
// escaped.
func userURL(hostPort string, u natsboot.User) string {
	return (&url.URL{Scheme: "nats", User: url.UserPassword(u.Name, u.Password), Host: hostPort}).String()
}
