package worker

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/pkg/task"
)

// This file keeps a keyed attempt from running twice when JetStream's
// delivery count cannot tell a redelivery from a first delivery: a
// nats-server that restarts without its latest consumer state, for one,
// hands out again a task it delivered before with a count of 1
// (docs/reconciliation.md, "When a worker reconciles"). Two defences:
//
//   - keyedMemory: the worker remembers, in process, every keyed attempt it
//     has begun, and the final result of one whose task it could not ack. A
//     redelivery of a remembered attempt reports that result again, or, when
//     there is none, is reconciled, whatever its delivery count.
//   - deliveryEpoch: a task stored before the worker started, before its
//     connection last reconnected, or before its last failed pull or the
//     re-creation of its consumer, may have been delivered under a count the
//     server has since lost (or by a consumer since deleted), so its first
//     delivery is reconciled too.

// maxRememberedAttempts bounds keyedMemory: the oldest attempts are
// forgotten first. An entry is a few hundred bytes, plus the result of an
// attempt whose task is not yet acked (rare: only while NATS is away).
const maxRememberedAttempts = 1 << 16

// attemptKey names one logical attempt of a step.
type attemptKey struct{ runID, stepID, logicalAttemptID string }

func attemptKeyOf(t task.Task) attemptKey {
	return attemptKey{runID: t.RunID, stepID: t.StepID, logicalAttemptID: t.LogicalAttemptID}
}

// keyedMemory remembers the keyed attempts this process has begun, bounded
// by maxRememberedAttempts (oldest forgotten first). Safe for concurrent
// use.
type keyedMemory struct {
	mu      sync.Mutex
	entries map[attemptKey]*keyedEntry
	order   []attemptKey // insertion order, for eviction
	max     int
}

func newKeyedMemory(maxEntries int) *keyedMemory {
	return &keyedMemory{entries: make(map[attemptKey]*keyedEntry), max: maxEntries}
}

// keyedEntry is one remembered attempt. Its turn serializes the deliveries
// of the attempt in this process: the fields are read and written only by
// the delivery holding it.
type keyedEntry struct {
	turn chan struct{} // holds a token while a delivery handles the attempt
	// begun: an earlier delivery in this process began handling the
	// attempt, so its side effect may have happened.
	begun bool
	// result is the final result of an earlier delivery whose task was
	// not acked (its publish, its ack or both failed); nil otherwise.
	result *task.Result
}

// take waits for the turn of attempt k and returns its entry, which the
// caller must end with done. It returns ctx's error if ctx ends first.
func (m *keyedMemory) take(ctx context.Context, k attemptKey) (*keyedEntry, error) {
	e := m.entry(k)
	select {
	case e.turn <- struct{}{}:
		return e, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// entry returns the entry of k, adding it (and forgetting the oldest one
// over the bound) if there is none.
func (m *keyedMemory) entry(k attemptKey) *keyedEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[k]; ok {
		return e
	}
	e := &keyedEntry{turn: make(chan struct{}, 1)}
	m.entries[k] = e
	m.order = append(m.order, k)
	if len(m.order) > m.max {
		delete(m.entries, m.order[0])
		m.order = m.order[1:]
	}
	return e
}

// remembered returns the final result an earlier delivery produced and
// could not have acked, if any.
func (e *keyedEntry) remembered() (task.Result, bool) {
	if e == nil || e.result == nil {
		return task.Result{}, false
	}
	return *e.result, true
}

// mayHaveRun reports whether an earlier delivery in this process began the
// attempt.
func (e *keyedEntry) mayHaveRun() bool { return e != nil && e.begun }

// done ends the holder's turn. finished reports that the delivery produced
// the final result r; acked that its task was acked, so r need not be kept.
// A nil entry (an unkeyed attempt) is a no-op.
func (e *keyedEntry) done(r task.Result, finished, acked bool) {
	if e == nil {
		return
	}
	e.begun = true
	switch {
	case acked:
		e.result = nil
	case finished:
		e.result = &r
	}
	<-e.turn
}

// deliveryEpoch is the time from which this worker trusts a delivery count
// of 1: its start, moved to the present when its connection has
// reconnected since (a restarted server may have lost the delivery state
// of the tasks it stored before). Safe for concurrent use.
type deliveryEpoch struct {
	nc         *nats.Conn
	mu         sync.Mutex
	reconnects uint64
	since      time.Time
}

// newDeliveryEpoch starts the epoch now, on nc (nil: never moved).
func newDeliveryEpoch(nc *nats.Conn, now time.Time) *deliveryEpoch {
	d := &deliveryEpoch{nc: nc, since: now}
	if nc != nil {
		d.reconnects = nc.Stats().Reconnects
	}
	return d
}

// distrust moves the epoch to now: this worker saw its consumer fail or
// come back (a failed pull, a consumer created again), after which a task
// it delivered before may come back with a delivery count of 1.
func (d *deliveryEpoch) distrust(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.since = later(d.since, now)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// predates reports whether a task stored at stored (the stream's clock) was
// stored before the epoch, so that its delivery count cannot be trusted. A
// reconnect is noticed here, late: the epoch then moves to now, which only
// widens what is distrusted.
func (d *deliveryEpoch) predates(stored, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nc != nil {
		if n := d.nc.Stats().Reconnects; n != d.reconnects {
			d.reconnects = n
			d.since = later(d.since, now)
		}
	}
	return stored.Before(d.since)
}
