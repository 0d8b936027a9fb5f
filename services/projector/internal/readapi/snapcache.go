package readapi

import (
	"container/list"
	"sync"
	"time"

	"github.com/weftrun/weft/pkg/events"
)

// snapVersion names one stored version of a run's snapshot: every save
// of a run_snapshots row sets its updated_at (clock_timestamp()) and its
// watermark, so a row with the same pair holds the same snapshot.
type snapVersion struct {
	updatedAt time.Time
	seq       int64
}

// cachedSnap is a decoded snapshot and its top-level steps. Both are
// shared by every request that reads them: read, never written.
type cachedSnap struct {
	version snapVersion
	snap    events.RunSnapshot
	top     []events.StepSnapshot
}

// snapCache keeps the decoded snapshots of recently read runs, so that a
// read of a run whose row has not changed neither fetches its snapshot
// from Postgres nor decodes it: the read asks for the row's version and
// gets the snapshot column only when it differs (runGetSQL). It holds at
// most maxSteps steps in all (a snapshot weighs its step count, at least
// 1), dropping the least recently used. It is safe for concurrent use; a
// nil snapCache holds nothing.
type snapCache struct {
	maxSteps int

	mu    sync.Mutex
	steps int
	runs  map[string]*list.Element // of *snapEntry
	lru   list.List                // front: most recently used
}

type snapEntry struct {
	runID string
	snap  *cachedSnap
}

// newSnapCache returns a cache of at most maxSteps steps; nil when
// maxSteps is not positive (off).
func newSnapCache(maxSteps int) *snapCache {
	if maxSteps <= 0 {
		return nil
	}
	return &snapCache{maxSteps: maxSteps, runs: map[string]*list.Element{}}
}

// get returns runID's cached snapshot, any version, or nil.
func (c *snapCache) get(runID string) *cachedSnap {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.runs[runID]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*snapEntry).snap
}

// put caches snap as runID's snapshot, replacing the one held, unless it
// alone weighs more than the cache holds.
func (c *snapCache) put(runID string, snap *cachedSnap) {
	if c == nil || weight(snap) > c.maxSteps {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.runs[runID]; ok {
		c.remove(e)
	}
	c.runs[runID] = c.lru.PushFront(&snapEntry{runID: runID, snap: snap})
	c.steps += weight(snap)
	for c.steps > c.maxSteps {
		c.remove(c.lru.Back())
	}
}

// held returns the runs and steps the cache holds.
func (c *snapCache) held() (runs, steps int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.runs), c.steps
}

// remove drops e. Called with mu held.
func (c *snapCache) remove(e *list.Element) {
	en := e.Value.(*snapEntry)
	c.lru.Remove(e)
	delete(c.runs, en.runID)
	c.steps -= weight(en.snap)
}

func weight(s *cachedSnap) int { return max(1, len(s.snap.Steps)) }
