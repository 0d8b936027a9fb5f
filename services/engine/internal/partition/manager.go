package partition

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/weftrun/weft/pkg/periodic"
)

// Manager keeps one engine's share of the partitions: it heartbeats the
// membership every Refresh, computes the engine's share (Assign) and
// acquires and releases partitions to match. Its fields are set before
// Run.
type Manager struct {
	Members *Members
	// Count returns P, the partition count. Run retries it every Refresh
	// until it succeeds (the streams may not be there yet), and asks again
	// at every heartbeat, keeping the last P it had when that fails.
	Count func(ctx context.Context) (int, error)
	// Refresh is the heartbeat interval; Lease the membership lease. An
	// engine whose heartbeats fail for Lease releases every partition:
	// the others take them once its row is a lease old.
	Refresh, Lease time.Duration
	// Acquire starts consuming partition p. A failure is logged and
	// retried at the next heartbeat.
	Acquire func(ctx context.Context, p int) error
	// Release stops consuming partition p, after the messages it delivered
	// are handled. Releases run in parallel.
	Release func(ctx context.Context, p int)
	// Changed, if set, is called with the partitions held after each
	// change.
	Changed func(held []int)
	Logger  *slog.Logger

	held      []int
	readyOnce sync.Once
	ready     chan struct{}
}

// Ready returns a channel closed once Run has applied its first share:
// the partitions it could acquire are being consumed.
func (m *Manager) Ready() <-chan struct{} {
	m.readyOnce.Do(func() { m.ready = make(chan struct{}) })
	return m.ready
}

// markReady closes Ready's channel, once; only the apply loop calls it.
func (m *Manager) markReady() {
	ready := m.Ready()
	select {
	case <-ready:
	default:
		close(m.ready)
	}
}

// Run keeps the engine's share until ctx ends, then releases every
// partition it holds and leaves the membership. The releases and the
// leave run on a context that does not end with ctx.
//
// Heartbeats and acquisitions run apart: a partition whose consumer is
// slow to create (a JetStream leader being elected) must not hold the
// heartbeat back, or the others would count this engine dead.
func (m *Manager) Run(ctx context.Context) {
	n, ok := m.count(ctx)
	if !ok {
		m.leave(context.WithoutCancel(ctx))
		return
	}
	members := make(chan []string, 1)
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		m.applyLoop(ctx, n, members)
	}()
	m.heartbeats(ctx, members)
	<-applied
	m.leave(context.WithoutCancel(ctx))
}

// heartbeats heartbeats every Refresh until ctx ends, and offers the
// members each heartbeat returns to the apply loop, replacing an offer it
// has not taken yet; nil once the heartbeats have failed for a lease.
// It asks nothing of the bus, whose calls can wait seconds on a leader
// election.
func (m *Manager) heartbeats(ctx context.Context, members chan []string) {
	offer := func(ms []string) {
		select {
		case <-members:
		default:
		}
		members <- ms
	}
	var lastBeat time.Time
	loop := periodic.Loop{Interval: m.Refresh, Immediate: true, Logger: m.Logger, Failed: "engine: membership heartbeat failed"}
	loop.Run(ctx, func(ctx context.Context) error {
		ms, err := m.Members.Heartbeat(ctx)
		switch {
		case err == nil:
			lastBeat = time.Now()
			offer(ms)
		case ctx.Err() == nil && time.Since(lastBeat) >= m.Lease:
			m.Logger.WarnContext(ctx, "engine: membership heartbeat failing; releasing every partition", "err", err)
			offer(nil)
			return nil
		}
		return err
	})
}

// applyLoop applies the share of each member list offered until ctx ends.
// A share offered again (every heartbeat) retries the acquisitions that
// failed. Before each it asks P again, within a Refresh, to follow
// streams created again with another P (rare); it keeps n when that fails.
func (m *Manager) applyLoop(ctx context.Context, n int, members <-chan []string) {
	for {
		select {
		case <-ctx.Done():
			return
		case ms := <-members:
			cctx, cancel := context.WithTimeout(ctx, m.Refresh)
			if now, err := m.Count(cctx); err == nil {
				n = now
			}
			cancel()
			m.apply(ctx, Assign(ms, m.Members.Self(), n))
			m.markReady()
		}
	}
}

// count returns P, retrying every Refresh; false when ctx ended first.
func (m *Manager) count(ctx context.Context) (int, bool) {
	for {
		n, err := m.Count(ctx)
		if err == nil {
			return n, true
		}
		m.Logger.WarnContext(ctx, "engine: partition count unknown; retrying", "err", err)
		if periodic.Sleep(ctx, m.Refresh) != nil {
			return 0, false
		}
	}
}

// apply releases the partitions held but not wanted, then acquires the
// wanted ones not held, in parallel.
func (m *Manager) apply(ctx context.Context, want []int) {
	var drop, keep, take []int
	for _, p := range m.held {
		if slices.Contains(want, p) {
			keep = append(keep, p)
		} else {
			drop = append(drop, p)
		}
	}
	for _, p := range want {
		if !slices.Contains(keep, p) {
			take = append(take, p)
		}
	}
	m.release(context.WithoutCancel(ctx), drop)
	keep = append(keep, m.acquire(ctx, take)...)
	slices.Sort(keep)
	if !slices.Equal(keep, m.held) {
		m.held = keep
		m.Logger.InfoContext(ctx, "engine: partitions changed", "held", keep)
		if m.Changed != nil {
			m.Changed(slices.Clone(keep))
		}
	}
}

// acquire acquires ps in parallel and returns those it acquired.
func (m *Manager) acquire(ctx context.Context, ps []int) []int {
	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			if err := m.Acquire(ctx, p); err != nil {
				m.Logger.WarnContext(ctx, "engine: acquiring a partition failed; retrying", "partition", p, "err", err)
				return
			}
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// release releases ps in parallel.
func (m *Manager) release(ctx context.Context, ps []int) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { m.Release(ctx, p) })
	}
	wg.Wait()
}

// leave releases every partition held and deletes the engine's row.
func (m *Manager) leave(ctx context.Context) {
	m.release(ctx, m.held)
	m.held = nil
	if m.Changed != nil {
		m.Changed(nil)
	}
	lctx, cancel := context.WithTimeout(ctx, m.Lease)
	defer cancel()
	if err := m.Members.Leave(lctx); err != nil {
		m.Logger.WarnContext(ctx, "engine: leaving the membership failed; the others wait out its lease", "err", err)
	}
}
