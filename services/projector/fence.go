package projector

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/weftrun/weft/pkg/periodic"
)

// The replay fence. Long polls are woken by commits: this process's
// (afterCommit) and other projectors' (listen.go: LISTEN on the primary,
// since a standby in recovery cannot LISTEN and its NOTIFY never fires).
// With a ReadPool a woken long poll rereads its run from the standby, which
// may not have replayed the commit that woke it yet: that reread would find
// the old snapshot and wait again, for a notification that has already
// come, until WaitRecheck. So with a ReadPool no wakeup goes straight to
// its long polls. The fence collects the runs to wake, reads the
// primary's flushed WAL position after their commits (every snapshot
// commit is synchronous, so it is flushed before it returns, and before
// its NOTIFY is sent), waits until the standby's replayed position reaches
// it, and only then wakes their long polls, whose reread therefore sees
// the change. The contract a long poll keeps: it answers from the standby,
// and it answers as soon as the standby shows the awaited runSeq (or the
// gap state changes), give or take one poll of the replay position
// (fencePollMax); a commit made with synchronous_commit off in the
// database's or the role's settings may be woken before the standby has it,
// and is then seen at WaitRecheck. While replay is paused or behind, the
// wakeups wait; a long poll's WaitRecheck still rereads the standby.
//
// One fence round at a time covers every run queued since the last: one
// read of the primary's position and a few of the standby's per round,
// however many runs and long polls it wakes. A failure to read either
// position is logged, and the round's runs are woken at once: their long
// polls reread the standby, and see the change at worst at WaitRecheck.

const (
	// fencePollMin and fencePollMax bound the interval of the standby's
	// replay position polls while a round waits: doubling from the first to
	// the second, so a standby a millisecond behind costs a poll or two, and
	// one paused for minutes twenty a second.
	fencePollMin = time.Millisecond
	fencePollMax = 50 * time.Millisecond
)

// replayFence holds the runs whose long polls a round of fenceLoop wakes.
// Safe for concurrent use.
type replayFence struct {
	mu      sync.Mutex
	pending map[string]struct{}
	all     bool          // wake every long poll: a LISTEN was (re)established
	kick    chan struct{} // capacity 1: a round is due
}

func newReplayFence() *replayFence {
	return &replayFence{pending: map[string]struct{}{}, kick: make(chan struct{}, 1)}
}

// add queues the long polls of runID, or of every run when runID is "",
// for the next round.
func (f *replayFence) add(runID string) {
	f.mu.Lock()
	if runID == "" {
		f.all = true
	} else {
		f.pending[runID] = struct{}{}
	}
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// take returns and forgets the queued runs and whether every long poll is
// to be woken.
func (f *replayFence) take() (runIDs []string, all bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	runIDs, all = slices.Collect(maps.Keys(f.pending)), f.all
	clear(f.pending)
	f.all = false
	return runIDs, all
}

// wakeRun wakes the long polls waiting on runID, whose snapshot a
// committed transaction changed: at once when they read the primary, else
// once the standby has replayed the commit (through the fence).
func (s *Service) wakeRun(runID string) {
	if s.fence != nil {
		s.fence.add(runID)
		return
	}
	s.changes.notify(runID)
}

// wakeAll wakes every long poll to reread its run, as wakeRun does.
func (s *Service) wakeAll() {
	if s.fence != nil {
		s.fence.add("")
		return
	}
	s.changes.notifyAll()
}

// fenceLoop runs the fence's rounds until ctx ends: it takes the queued
// runs, waits for the standby to replay the primary's WAL as flushed
// after their commits, and wakes their long polls.
func (s *Service) fenceLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.fence.kick:
		}
		runIDs, all := s.fence.take()
		if !s.awaitReplay(ctx) {
			return
		}
		if all {
			s.changes.notifyAll()
		}
		for _, id := range runIDs {
			s.changes.notify(id)
		}
	}
}

// awaitReplay returns once the standby has replayed the primary's WAL up
// to its flushed position as of the call, or a position could not be read
// (logged); false once ctx has ended.
func (s *Service) awaitReplay(ctx context.Context) bool {
	target, err := flushLSN(ctx, s.pool)
	if err != nil {
		s.fenceFailed(ctx, err)
		return ctx.Err() == nil
	}
	if k := s.cfg.TestingKnobs.ReplayFenced; k != nil {
		k(target)
	}
	for wait := fencePollMin; ; wait = min(2*wait, fencePollMax) {
		replayed, standby, err := replayLSN(ctx, s.read)
		switch {
		case err != nil:
			s.fenceFailed(ctx, err)
			return ctx.Err() == nil
		case !standby || replayed >= target:
			return true
		}
		if periodic.Sleep(ctx, wait) != nil {
			return false
		}
	}
}

// fenceFailed logs a failed read of a WAL position, unless ctx ended.
func (s *Service) fenceFailed(ctx context.Context, err error) {
	if ctx.Err() == nil {
		s.logger.WarnContext(ctx, "projector: long polls woken without waiting for the standby's replay", "err", err)
	}
}
