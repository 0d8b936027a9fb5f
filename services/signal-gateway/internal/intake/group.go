package intake

import (
	"context"
	"slices"
	"sync"
)

// Limits of grouped writes (grouper).
const (
	// maxGroups bounds the groups of one kind decided at once, each in a
	// transaction and on a connection of its own.
	maxGroups = 2
	// maxGroupSize bounds the calls of one group.
	maxGroupSize = 16
)

// waiter is what a grouper needs of each call it groups: the caller's
// context, the channel it waits on, and where a failure to get a group is
// answered.
type waiter struct {
	ctx  context.Context
	wake chan bool // true to lead a group, false once answered
	err  error
}

// member is a call a grouper groups: a signal (call) or a start
// (startCall). Calls of one groupKey never share a group.
type member interface {
	comparable
	waiting() *waiter
	groupKey() string
}

// grouper gathers the calls made at the same time into groups, each
// decided and committed in one transaction: signals (decideTx) and starts
// (startGroupTx). Every acceptance and every start commits with a WAL
// flush, and with the outbox's NOTIFY, for which Postgres holds one lock
// per cluster through that flush, so concurrent writes commit one after
// the other; a group commits many at once.
//
// A group holds at most one call per groupKey: signals of one run are
// decided in turn, each under the run's lock, seeing the ones before it,
// and starts of one run request claim it in turn. A call that finds fewer
// than maxGroups groups being decided leads one at once, so a gateway
// that is not busy decides each call alone, on the caller's goroutine,
// without waiting. Otherwise it waits, and the next group is led by the
// oldest waiting call once a group is done, with the waiting calls of
// other keys, oldest first. Safe for concurrent use.
type grouper[C member] struct {
	// decide decides a group and sets the answers of its calls.
	decide func(group []C)

	mu      sync.Mutex
	queue   []C // waiting for a group, oldest first
	leaders int // groups being decided
}

// send decides c, alone or in a group, and returns once c is answered. If
// c's context ends while it waits for a group, c is answered with the
// context's error and leaves the queue; once in a group, it stays to its
// end.
func (g *grouper[C]) send(c C) {
	g.mu.Lock()
	if g.leaders < maxGroups {
		g.leaders++
		group := g.take(c)
		g.mu.Unlock()
		g.lead(group)
		return
	}
	w := c.waiting()
	w.wake = make(chan bool, 1)
	g.queue = append(g.queue, c)
	g.mu.Unlock()
	select {
	case lead := <-w.wake:
		if lead {
			g.leadNext(c)
		}
	case <-w.ctx.Done():
		if g.leave(c) {
			w.err = w.ctx.Err()
			return
		}
		if <-w.wake { // promoted as it was canceled
			g.leadNext(c)
		}
	}
}

// leadNext has c, promoted from the queue, lead the next group, unless
// c's context has ended: c then passes the lead on.
func (g *grouper[C]) leadNext(c C) {
	if err := c.waiting().ctx.Err(); err != nil {
		c.waiting().err = err
		g.handOff()
		return
	}
	g.mu.Lock()
	group := g.take(c)
	g.mu.Unlock()
	g.lead(group)
}

// lead decides group, wakes its other calls, and hands the lead on.
func (g *grouper[C]) lead(group []C) {
	g.decide(group)
	for _, c := range group[1:] {
		c.waiting().wake <- false
	}
	g.handOff()
}

// handOff gives the caller's lead to the oldest waiting call, or gives it
// up when none waits.
func (g *grouper[C]) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.leaders--
		return
	}
	next := g.queue[0]
	g.queue = slices.Delete(g.queue, 0, 1)
	next.waiting().wake <- true
}

// take returns the group first leads: first, then the waiting calls of
// other keys, oldest first, up to maxGroupSize, which leave the queue.
// g.mu must be held.
func (g *grouper[C]) take(first C) []C {
	group := []C{first}
	g.queue = slices.DeleteFunc(g.queue, func(c C) bool {
		if len(group) == maxGroupSize || slices.ContainsFunc(group, func(m C) bool { return m.groupKey() == c.groupKey() }) {
			return false
		}
		group = append(group, c)
		return true
	})
	return group
}

// leave takes c out of the queue and reports whether it was there.
func (g *grouper[C]) leave(c C) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.queue, c)
	if i < 0 {
		return false
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	return true
}
