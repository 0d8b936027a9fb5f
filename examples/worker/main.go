// Command worker is a Weft worker of your own: it serves two activities,
// fetch-json (calls an HTTP API with a secret from the plan) and count-by
// (transforms data), on its own task queue, "my-activities". Copy it and
// change the activities.
//
// Run it beside `weft dev`, from the folder you started the stack in:
//
//	WEFT_SECRET_API_TOKEN="$(cat .weft/dev/token)" go run ./examples/worker
//
// It finds the dev stack's NATS as the weft CLI finds its API: in
// $WEFT_DEV_DIR/endpoints.json (default .weft/dev), which `weft dev` writes
// (docs/cli.md, "Finding the dev stack"). WEFT_NATS_URL, a URL with the
// user and password in it, takes precedence, for a NATS of your own. The
// plan examples/worker/plan.yaml uses both activities; examples/README.md
// has the tour.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/worker"
)

// Queue is the task queue this worker serves; the plan's steps name it.
// Every worker of a queue must register the same activities, so a worker
// of your own takes a queue of its own, not "default" (docs/worker-protocol.md).
const Queue = "my-activities"

// stopTimeout bounds the wait for running activities when the worker stops.
const stopTimeout = 30 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run connects, registers the activities and serves the queue until ctx
// ends; then it lets running activities finish (up to stopTimeout).
func run(ctx context.Context, getenv func(string) string, logOut io.Writer) error {
	log := slog.New(slog.NewTextHandler(logOut, nil))
	conn, err := natsConnection(getenv)
	if err != nil {
		return err
	}
	nc, err := nats.Connect(conn.url, append(conn.opts, nats.Name("examples/worker"))...)
	if err != nil {
		return fmt.Errorf("connect to NATS (%s): %w", conn.from, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// Secrets: a step's {"provider": "env", "key": "API_TOKEN"} reads
	// WEFT_SECRET_API_TOKEN, and nothing outside that prefix.
	w, err := worker.New(js, worker.Config{Queue: Queue, Logger: log},
		worker.WithSecretsProvider("env", worker.EnvSecrets{}))
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: fetchTimeout}
	defer client.CloseIdleConnections()
	if err := w.Register("fetch-json", FetchJSON(client), worker.WithTimeout(time.Minute)); err != nil {
		return err
	}
	if err := w.Register("count-by", CountBy); err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	log.Info("serving", "queue", Queue, "nats", conn.from, "activities", "fetch-json, count-by")
	select {
	case <-ctx.Done():
	case <-w.Stopped(): // by itself: its NATS connection closed for good
		return w.Err()
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	return w.Stop(stopCtx)
}

// endpoints is the part of `weft dev`'s endpoints.json a worker needs.
type endpoints struct {
	NATS             string `json:"nats"`
	NATSUser         string `json:"natsUser"`
	NATSPasswordFile string `json:"natsPasswordFile"`
}

// natsConn says how to reach NATS: url and opts, and from, where they
// came from (no password), for messages.
type natsConn struct {
	url, from string
	opts      []nats.Option
}

// natsConnection returns how to reach NATS: WEFT_NATS_URL when set, else
// the dev stack's, from endpoints.json in WEFT_DEV_DIR (default .weft/dev).
func natsConnection(getenv func(string) string) (natsConn, error) {
	if url := getenv("WEFT_NATS_URL"); url != "" {
		return natsConn{url: url, from: "WEFT_NATS_URL"}, nil
	}
	path := filepath.Join(cmp.Or(getenv("WEFT_DEV_DIR"), ".weft/dev"), "endpoints.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return natsConn{}, fmt.Errorf("no dev stack: %s does not exist; start `weft dev` (make run) in this folder, or set WEFT_DEV_DIR to its data folder, or WEFT_NATS_URL", path)
	}
	if err != nil {
		return natsConn{}, err
	}
	var e endpoints
	if err := json.Unmarshal(b, &e); err != nil {
		return natsConn{}, fmt.Errorf("%s: %w", path, err)
	}
	password, err := os.ReadFile(e.NATSPasswordFile)
	if err != nil {
		return natsConn{}, fmt.Errorf("the dev stack's NATS password (named in %s): %w", path, err)
	}
	return natsConn{url: e.NATS, from: e.NATS + ", from " + path,
		opts: []nats.Option{nats.UserInfo(e.NATSUser, strings.TrimSpace(string(password)))}}, nil
}
