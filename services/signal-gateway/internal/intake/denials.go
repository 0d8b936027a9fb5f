package intake

import (
	"sync"
	"time"
)

// What became of a signal its principal may not send (Error.Denial).
const (
	// DenialRecorded: refused with CodePermissionDenied and recorded as
	// the SignalRejected of its API key, run and window.
	DenialRecorded = "recorded"
	// DenialUnrecorded: refused with CodePermissionDenied; the key's
	// SignalRejected of the run and window was already in the log.
	DenialUnrecorded = "unrecorded"
	// DenialRateLimited: refused with CodeRateLimited, nothing recorded:
	// the run's signal rate limit counts denials.
	DenialRateLimited = "rate_limited"
)

// denialCounter counts, per run, the denied signals this Intake decided
// in the current window of RateWindow (aligned on the zero time, as
// time.Truncate is). It is memory of one gateway: with N gateways a run
// takes at most N times its limit of denials in a window, and the log at
// most one SignalRejected per key, run and window whatever N is (the
// record's key decides). Safe for concurrent use.
type denialCounter struct {
	mu     sync.Mutex
	window time.Time      // the start of the window counted
	counts map[string]int // by run id
}

// add counts a denial of runID at now and returns the run's denials in
// now's window, this one included, and the window's end. A clock that
// went back counts in the window already counted.
func (d *denialCounter) add(runID string, now time.Time) (int, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if start := now.Truncate(RateWindow); d.counts == nil || start.After(d.window) {
		d.window, d.counts = start, make(map[string]int)
	}
	d.counts[runID]++
	return d.counts[runID], d.window.Add(RateWindow)
}

// rejectedKey is the logicalAttemptId of the SignalRejected recording the
// denials of keyID's signals to runID in the window of length window that
// holds now: "rejected:{runId}:key:{keyId}:{windowStart}", the key id
// escaped, the start in RFC 3339 UTC. Every denial of the window has the
// same key, so the log holds one (the state store returns the existing
// runSeq for a duplicate idempotency key).
func rejectedKey(runID, keyID string, now time.Time, window time.Duration) string {
	return "rejected:" + runID + ":key:" + escapeComponent(keyID) + ":" + now.Truncate(window).UTC().Format(time.RFC3339Nano)
}
