package projector_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/internal/testkit/metrictest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector"
)

// MaxLongPollsPerKey caps the long polls one key holds open: at the cap
// they are all held; the next is refused with 429 and Retry-After before
// any query, while the key's plain reads and another key's long polls go
// on; once one of its polls answers, the key may open another.
func TestLongPollsCappedPerKey(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{MaxLongPollsPerKey: 2, MaxWait: 10 * time.Minute, KeyRate: keylimit.Off})
	runID := s.approve(t, "poll")
	s.waitRun(t, runID, atSeq(1), "approved")

	next := s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=2&timeout=10m")
	later := s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=5&timeout=10m")
	s.waitOpenPolls(t, 2)
	requireWaiting(t, next)
	requireWaiting(t, later)

	r := <-s.startPoll(t, "/v1/runs/"+runID+"?waitForSeq=5&timeout=10m")
	requireRefused(t, r, `"reader"`, "2 long polls")
	require.Equal(t, int64(1), s.refused(t, "key_long_polls"))
	var v api.RunView
	s.fetch(t, readerToken, "/v1/runs/"+runID).decode(t, &v) // not a long poll: not capped
	requireError(t, s.fetch(t, otherToken, "/v1/runs/"+events.NewRunID()+"?waitForSeq=1&timeout=200ms"),
		http.StatusNotFound, api.CodeNotFound) // another key's long poll is held to its timeout

	s.appendBus(t, lifecycle(t, runID)[:1]...)
	(<-next).decode(t, &v)
	require.Equal(t, int64(2), v.LastEventSeq)
	s.waitOpenPolls(t, 1)
	s.poll(t, "/v1/runs/"+runID+"?waitForSeq=2&timeout=10m").decode(t, &v)
	require.Equal(t, int64(2), v.LastEventSeq)
	requireWaiting(t, later)
	require.Equal(t, int64(1), s.refused(t, "key_long_polls"))
}

// KeyRate holds each key to its request rate over the whole read API:
// the burst passes (a list, a get, an events page, answered 200 or 404),
// the next request (here a long poll) is refused with 429 and the
// Retry-After the bucket needs, before any query; another key has a
// bucket of its own, and a request with no key is not counted.
func TestReadRateLimitedPerKey(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{KeyRate: keylimit.Limit{Rate: 0.001, Burst: 3}}) // a token per 1000 s
	runID := events.NewRunID()

	requireError(t, s.fetch(t, "", "/v1/runs"), http.StatusUnauthorized, api.CodeUnauthenticated)
	for _, path := range []string{"/v1/runs", "/v1/runs/" + runID, "/v1/runs/" + runID + "/events?afterSeq=0"} {
		require.Contains(t, []int{http.StatusOK, http.StatusNotFound}, s.fetch(t, readerToken, path).status, path)
	}
	r := s.fetch(t, readerToken, "/v1/runs/"+runID+"?waitForSeq=1&timeout=10m")
	requireRefused(t, r, `"reader"`, "0.001/s burst 3")
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, secs >= 1 && secs <= 1000, "Retry-After %d: the time one token takes, at most 1000 s", secs)
	require.Equal(t, int64(1), s.refused(t, "key_rate"))

	require.Equal(t, http.StatusOK, s.fetch(t, otherToken, "/v1/runs").status)
	requireRefused(t, s.fetch(t, readerToken, "/v1/runs"), `"reader"`)
	require.Equal(t, int64(2), s.refused(t, "key_rate"))
}

// requireRefused asserts r is a 429 RateLimited in the API's error shape,
// with a Retry-After of whole seconds that details.retryAfter repeats.
func requireRefused(t *testing.T, r reply, parts ...string) {
	t.Helper()
	requireError(t, r, http.StatusTooManyRequests, api.CodeRateLimited, parts...)
	var body api.ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &body))
	require.Equal(t, r.header.Get("Retry-After"), strconv.Itoa(int(body.Error.Details["retryAfter"].(float64))))
}

// waitOpenPolls waits until weft.projector.longpolls.open is n.
func (s *stack) waitOpenPolls(t *testing.T, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return s.counter(t, "weft.projector.longpolls.open") == n },
		waitFor, 5*time.Millisecond, "%d long polls open", n)
}

// refused reads weft.projector.requests.refused for reason.
func (s *stack) refused(t *testing.T, reason string) int64 {
	t.Helper()
	return metrictest.Sum(t, s.metrics, "weft.projector.requests.refused", "reason", reason)
}
