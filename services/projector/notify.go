package projector

import "sync"

// notifier wakes the long polls waiting on a run when a change to it is
// committed: by this process (afterCommit), or by another projector or a
// rebuild (listenLoop, through Postgres NOTIFY). Long polls also recheck
// Postgres every WaitRecheck, a safety net for a notification lost to a
// LISTEN connection that died silently.
type notifier struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

// wait returns a channel closed at the run's next change and a function
// that stops waiting.
func (n *notifier) wait(runID string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters == nil {
		n.waiters = map[string]map[chan struct{}]struct{}{}
	}
	if n.waiters[runID] == nil {
		n.waiters[runID] = map[chan struct{}]struct{}{}
	}
	n.waiters[runID][ch] = struct{}{}
	return ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if _, ok := n.waiters[runID][ch]; ok {
			delete(n.waiters[runID], ch)
			if len(n.waiters[runID]) == 0 {
				delete(n.waiters, runID)
			}
		}
	}
}

// notify wakes every waiter of runID.
func (n *notifier) notify(runID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.waiters[runID] {
		close(ch)
	}
	delete(n.waiters, runID)
}

// notifyAll wakes every waiter of every run: each rechecks its run. It is
// what a (re)connected LISTEN does, for the commits it may have missed.
func (n *notifier) notifyAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, chs := range n.waiters {
		for ch := range chs {
			close(ch)
		}
	}
	clear(n.waiters)
}
