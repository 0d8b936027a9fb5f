package projector_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector"
)

// A long poll for the next runSeq is held until the event is applied and
// answers then: the 60 s timeout it asks for is past the request's
// deadline (waitFor).
func TestLongPollWakesOnTheNextEvent(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "poll")
	s.waitRun(t, runID, atSeq(1), "approved")

	answer := s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=2&timeout=60s")
	requireWaiting(t, answer)
	s.appendBus(t, lifecycle(t, runID)[:1]...)
	r := <-answer
	require.NoError(t, r.err)
	var v api.RunView
	r.decode(t, &v)
	require.Equal(t, int64(2), v.LastEventSeq)
	require.Equal(t, events.RunStatusRunning, v.Status)
	require.Equal(t, `"2"`, r.header.Get("ETag"))
}

// A long poll waiting for a later runSeq also answers when the run goes
// STALE: a reader learns of the gap at once, not at its timeout, and the
// ETag says the snapshot is stale. The reader passes the tag it holds, so
// a gap that opens before the server first reads the run counts too.
func TestLongPollWakesWhenTheRunGoesStale(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{MaxWait: 10 * time.Minute})
	runID := s.approve(t, "poll")
	s.waitRun(t, runID, atSeq(1), "approved")

	answer := s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=5&timeout=10m", "If-None-Match", `"1"`)
	requireWaiting(t, answer)
	s.openGap(t, runID)
	requireStaleAnswer(t, <-answer)
}

// openGap puts runSeq 3 of the run in the log and on the bus, with
// nothing at runSeq 2: a gap.
func (s *stack) openGap(t *testing.T, runID string) {
	t.Helper()
	s.openLogGap(t, runID, 1)
}

func requireStaleAnswer(t *testing.T, r reply) {
	t.Helper()
	require.NoError(t, r.err)
	var v api.RunView
	r.decode(t, &v)
	require.True(t, v.Stale)
	require.Equal(t, int64(1), v.LastEventSeq, "nothing past the gap")
	require.Equal(t, `"1-stale"`, r.header.Get("ETag"))
}

// The gap state a long poll waits to change is the one its If-None-Match
// names: a poll holding "1" on a run already stale answers at once; one
// holding "1-stale", both tags (as pkg/client sends), or none, waits for
// its runSeq or its timeout. The polls run one at a time, so the
// LongPollWaiting calls between a poll's start and its answer are its
// own: none for one that answers at once, at least one for one held.
func TestLongPollComparesWithTheTagItHolds(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	var waits atomic.Int64
	s.serve(t, projector.Config{MaxWait: 10 * time.Minute,
		TestingKnobs: projector.TestingKnobs{LongPollWaiting: func() { waits.Add(1) }}})
	runID := s.approve(t, "poll")
	s.waitRun(t, runID, atSeq(1), "approved")
	s.openGap(t, runID)
	s.waitRun(t, runID, func(v api.RunView) bool { return v.Stale }, "stale")

	before := waits.Load()
	requireStaleAnswer(t, <-s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=5&timeout=10m", "If-None-Match", `"1"`))
	require.Equal(t, before, waits.Load(), "the poll holding \"1\" answered without waiting")
	for _, header := range [][]string{{"If-None-Match", `"1-stale"`}, {"If-None-Match", `"1", "1-stale"`}, nil} {
		before := waits.Load()
		r := <-s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=5&timeout=300ms", header...)
		require.Greater(t, waits.Load(), before, "the poll waited for a change (%v)", header)
		// Nothing changed while it waited: its timeout answered the run
		// as it was, as not modified to a poll holding its tag.
		if header == nil {
			requireStaleAnswer(t, r)
			continue
		}
		require.NoError(t, r.err)
		require.Equal(t, http.StatusNotModified, r.status, "%v: %s", header, r.body)
		require.Equal(t, `"1-stale"`, r.header.Get("ETag"))
	}
}

// A long poll whose runSeq is already reached, or whose timeout is zero,
// answers at once (the deadline of these requests is far below MaxWait);
// one for a run that never appears answers 404 at its timeout.
func TestLongPollAnswersAtOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{MaxWait: 10 * time.Minute})
	runID := s.approve(t, "poll")
	s.waitRun(t, runID, atSeq(1), "approved")

	for _, query := range []string{"?waitForSeq=1&timeout=10m", "?waitForSeq=0&timeout=10m", "?waitForSeq=99&timeout=0s"} {
		var v api.RunView
		s.poll(t, "/v1/runs/"+runID+query).decode(t, &v)
		require.Equal(t, int64(1), v.LastEventSeq, query)
	}
	requireError(t, s.poll(t, "/v1/runs/"+events.NewRunID()+"?waitForSeq=1&timeout=200ms"),
		http.StatusNotFound, api.CodeNotFound)
}

// A long poll on a run that does not exist yet answers once it does.
func TestLongPollWaitsForTheRun(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{MaxWait: 10 * time.Minute})
	runID := events.NewRunID()

	answer := s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=1&timeout=10m")
	requireWaiting(t, answer)
	s.approveAs(t, runID)
	r := <-answer
	require.NoError(t, r.err)
	var v api.RunView
	r.decode(t, &v)
	require.Equal(t, runID, v.RunID)
	require.Equal(t, int64(1), v.LastEventSeq)
}

// MaxWait caps the timeout a long poll asks for: the run is answered
// unchanged.
func TestLongPollTimeoutIsCapped(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{MaxWait: 300 * time.Millisecond})
	runID := s.approve(t, "poll")
	s.waitRun(t, runID, atSeq(1), "approved")

	var v api.RunView
	s.poll(t, "/v1/runs/"+runID+"?waitForSeq=99&timeout=60s").decode(t, &v)
	require.Equal(t, int64(1), v.LastEventSeq)
}
