package engine

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/streams"
)

// laneStreams creates the lanes stream of each queue a tenant's task is
// dispatched to (streams.EnsureTaskLanes), once per queue and process:
// the relay cannot publish a task no stream captures. Safe for concurrent
// use.
type laneStreams struct {
	js  jetstream.JetStream
	cfg streams.Config

	mu   sync.Mutex
	done map[string]bool
}

func newLaneStreams(js jetstream.JetStream, cfg streams.Config) *laneStreams {
	return &laneStreams{js: js, cfg: cfg, done: map[string]bool{}}
}

// ensure makes sure queue's lanes stream exists; it asks the server the
// first time only, and again after a failure.
func (l *laneStreams) ensure(ctx context.Context, queue string) error {
	l.mu.Lock()
	ok := l.done[queue]
	l.mu.Unlock()
	if ok {
		return nil
	}
	if err := streams.EnsureTaskLanes(ctx, l.js, l.cfg, queue); err != nil {
		return err
	}
	l.mu.Lock()
	l.done[queue] = true
	l.mu.Unlock()
	return nil
}
