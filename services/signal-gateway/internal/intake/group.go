package intake

import (
	"slices"
	"sync"
)

// Limits of grouped acceptance (grouper).
const (
	// maxGroups bounds the groups decided at once, each in a transaction
	// and on a connection of its own.
	maxGroups = 2
	// maxGroupSize bounds the signals of one group.
	maxGroupSize = 16
)

// grouper gathers the signals sent at the same time into groups, each
// decided and committed in one transaction (decideTx). Every acceptance
// commits with a WAL flush, and with the outbox's NOTIFY, for which
// Postgres holds one lock per cluster through that flush, so concurrent
// acceptances commit one after the other; a group commits many at once.
//
// A group holds at most one signal per run: signals of one run are
// decided in turn, each under the run's lock, seeing the ones before it.
// A signal that finds fewer than maxGroups groups being decided leads one
// at once, so a gateway that is not busy decides each signal alone, on
// the caller's goroutine, without waiting. Otherwise it waits, and the
// next group is led by the oldest waiting signal once a group is done,
// with the waiting signals of other runs, oldest first. Safe for
// concurrent use.
type grouper struct {
	// decide decides a group and sets the answers of its calls.
	decide func(group []*call)

	mu      sync.Mutex
	queue   []*call // waiting for a group, oldest first
	leaders int     // groups being decided
}

// send decides c, alone or in a group, and returns once c is answered. If
// c's context ends while it waits for a group, c is answered with the
// context's error and leaves the queue; once in a group, it stays to its
// end.
func (g *grouper) send(c *call) {
	g.mu.Lock()
	if g.leaders < maxGroups {
		g.leaders++
		group := g.take(c)
		g.mu.Unlock()
		g.lead(group)
		return
	}
	c.wake = make(chan bool, 1)
	g.queue = append(g.queue, c)
	g.mu.Unlock()
	select {
	case lead := <-c.wake:
		if lead {
			g.leadNext(c)
		}
	case <-c.ctx.Done():
		if g.leave(c) {
			c.err = c.ctx.Err()
			return
		}
		if <-c.wake { // promoted as it was canceled
			g.leadNext(c)
		}
	}
}

// leadNext has c, promoted from the queue, lead the next group, unless
// c's context has ended: c then passes the lead on.
func (g *grouper) leadNext(c *call) {
	if err := c.ctx.Err(); err != nil {
		c.err = err
		g.handOff()
		return
	}
	g.mu.Lock()
	group := g.take(c)
	g.mu.Unlock()
	g.lead(group)
}

// lead decides group, wakes its other calls, and hands the lead on.
func (g *grouper) lead(group []*call) {
	g.decide(group)
	for _, c := range group[1:] {
		c.wake <- false
	}
	g.handOff()
}

// handOff gives the caller's lead to the oldest waiting call, or gives it
// up when none waits.
func (g *grouper) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.leaders--
		return
	}
	next := g.queue[0]
	g.queue = slices.Delete(g.queue, 0, 1)
	next.wake <- true
}

// take returns the group first leads: first, then the waiting calls of
// other runs, oldest first, up to maxGroupSize, which leave the queue.
// g.mu must be held.
func (g *grouper) take(first *call) []*call {
	group := []*call{first}
	g.queue = slices.DeleteFunc(g.queue, func(c *call) bool {
		if len(group) == maxGroupSize || slices.ContainsFunc(group, func(m *call) bool { return m.sig.RunID == c.sig.RunID }) {
			return false
		}
		group = append(group, c)
		return true
	})
	return group
}

// leave takes c out of the queue and reports whether it was there.
func (g *grouper) leave(c *call) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.queue, c)
	if i < 0 {
		return false
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	return true
}
