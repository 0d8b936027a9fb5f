package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

// rejectedEvents is the number of SignalRejected events in runID's log.
func (s *stack) rejectedEvents(t *testing.T, runID string) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM run_events WHERE run_id = $1 AND event_type = 'SignalRejected'`, runID).Scan(&n))
	return n
}

// denySignal sends, as the viewer (who may not signal), a signal with id
// to runID over REST and returns the answer's status.
func (s *stack) denySignal(t *testing.T, runID, id string) int {
	t.Helper()
	a, err := s.do(t, http.MethodPost, "/v1/runs/"+runID+"/signals", viewerToken,
		fmt.Appendf(nil, `{"signalName":"PAUSE","signalId":%q}`, id))
	require.NoError(t, err)
	return a.status
}

// Issue 17, item 5, the attack: 200 denied signals with fresh signalIds
// from one viewer key wrote 202 events. Now the log holds one
// SignalRejected for the key, run and window; the run's rate limit
// (60 by default) counts the denials, so the 61st and later are 429; the
// rest are counted.
func TestDeniedSignalsAreBounded(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	s := setup(t, gateway.Config{MeterProvider: mp, DisableScheduler: true, Intake: gateway.IntakeConfig{Now: clk.Now}})
	runID := s.run(t)
	before := s.counts(t).events

	byStatus := map[int]int{}
	for i := range 200 {
		byStatus[s.denySignal(t, runID, fmt.Sprint("v-", i))]++
	}
	limit := intake.DefaultMaxSignalsPerRunMinute
	require.Equal(t, map[int]int{http.StatusForbidden: limit, http.StatusTooManyRequests: 200 - limit}, byStatus)
	require.Equal(t, 1, s.rejectedEvents(t, runID))
	require.Equal(t, before+1, s.counts(t).events, "one event for 200 denials")

	sc := metricstest.Get(t, h)
	denials := func(outcome string) int64 {
		return sc.Count(t, "weft_gateway_signal_denials_total", map[string]string{"outcome": outcome})
	}
	require.Equal(t, int64(1), denials("recorded"))
	require.Equal(t, int64(limit-1), denials("unrecorded"))
	require.Equal(t, int64(200-limit), denials("rate_limited"))

	// The operator's signals are limited by acceptances alone.
	a := s.post(t, "/v1/runs/"+runID+"/signals", map[string]any{"signalName": "go", "signalId": "op-1"})
	require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
}

// The edges of the limit and of the window: with a limit of 3 and one
// acceptance, two denials are 403 and the third 429; within a
// SignalRejectedWindow of two minutes the key's denials write one
// SignalRejected, up to its last microsecond, and the first denial of the
// next window writes the second.
func TestDeniedSignalsLimitAndWindowEdges(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clk := intaketest.NewClock(start)
	s := setup(t, gateway.Config{DisableScheduler: true, Intake: gateway.IntakeConfig{Now: clk.Now,
		MaxSignalsPerRunMinute: 3, SignalRejectedWindow: 2 * time.Minute}})
	runID := s.run(t)
	a := s.post(t, "/v1/runs/"+runID+"/signals", map[string]any{"signalName": "go", "signalId": "op-1"})
	require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)

	require.Equal(t, http.StatusForbidden, s.denySignal(t, runID, "v-1"))
	require.Equal(t, 1, s.rejectedEvents(t, runID))
	require.Equal(t, http.StatusForbidden, s.denySignal(t, runID, "v-2"), "1 accepted + 2 denied: at the limit")
	a, err := s.do(t, http.MethodPost, "/v1/runs/"+runID+"/signals", viewerToken, []byte(`{"signalName":"PAUSE","signalId":"v-3"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, a.status, "past the limit: %s", a.body)
	require.Equal(t, api.CodeRateLimited, a.errorBody(t).Code)
	require.NotEmpty(t, a.header.Get("Retry-After"))
	require.Equal(t, 1, s.rejectedEvents(t, runID))
	// Two more signals of the operator's are accepted: denials do not use
	// up the budget of keys that may signal.
	for _, id := range []string{"op-2", "op-3"} {
		a = s.post(t, "/v1/runs/"+runID+"/signals", map[string]any{"signalName": "go", "signalId": id})
		require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
	}

	clk.Set(start.Add(2*time.Minute - time.Microsecond)) // the rate window has moved on, the record's has not
	require.Equal(t, http.StatusForbidden, s.denySignal(t, runID, "v-4"))
	require.Equal(t, 1, s.rejectedEvents(t, runID), "the last microsecond of the window")

	clk.Set(start.Add(2 * time.Minute))
	require.Equal(t, http.StatusForbidden, s.denySignal(t, runID, "v-5"))
	require.Equal(t, 2, s.rejectedEvents(t, runID), "the first denial of the next window is recorded")
}
