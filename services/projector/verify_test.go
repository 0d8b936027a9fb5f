package projector_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/projector"
)

// forgedCount is weft.projector.events.forged, every reason.
func (s *stack) forgedCount(t *testing.T) int64 {
	t.Helper()
	return s.counter(t, "weft.projector.events.forged")
}

// waitForged waits until the projector has dropped n forged events in all.
func (s *stack) waitForged(t *testing.T, n int64) {
	t.Helper()
	s.waitForgedOr(t, n, "", nil)
}

// waitForgedOr waits until the projector has dropped n forged events in
// all, or harmed (when not nil) reports that the run's view shows the
// forgery's harm: the assertions that follow then fail on the harm itself.
func (s *stack) waitForgedOr(t *testing.T, n int64, runID string, harmed func(api.RunView) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		if harmed != nil {
			if v, ok := s.run(t, runID); ok && harmed(v) {
				return true
			}
		}
		return s.forgedCount(t) >= n
	}, waitFor, 10*time.Millisecond, "%d forged events dropped; logs:\n%s", n, s.logs)
}

// forgedRunFailed is a RunFailed of the run at seq that no engine wrote.
func forgedRunFailed(t *testing.T, runID string, seq int64) events.Event {
	t.Helper()
	ev := step(t, runID, "", events.RunFailed, events.RunFailedData{Reason: "forged"})
	ev.RunSeq, ev.PersistedAt = seq, time.Now().UTC()
	return ev
}

// Whoever can publish on the bus cannot rewrite what readers see: a
// RunFailed published at lastEventSeq+1 of a completed run, and one at a
// runSeq the log holds another event at, are dropped, never applied; the
// run reads COMPLETED, with a PROJECTOR_FORGED_EVENT alert (P2, in the log,
// the counters and GET /v1/alerts) and no gap.
func TestForgedEventIsNeverApplied(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "forged")
	s.appendBus(t, lifecycle(t, runID)...)
	s.waitRun(t, runID, atSeq(6), "completes")

	terminated := s.terminations(t)
	seq := s.publishSeq(t, forgedRunFailed(t, runID, 7))
	s.waitForgedOr(t, 1, runID, func(v api.RunView) bool {
		return v.Status != events.RunStatusCompleted || v.LastEventSeq != 6 || v.Stale
	})
	requireTerminated(t, terminated, seq)
	v, _ := s.run(t, runID)
	require.Equal(t, events.RunStatusCompleted, v.Status, "the forged RunFailed is not applied")
	require.Equal(t, int64(6), v.LastEventSeq)
	require.False(t, v.Stale)
	s.requireMatchesLog(t, v)
	require.Contains(t, s.alerts(t), projector.Alert{Code: projector.AlertForged, Severity: projector.SeverityP2, RunID: runID,
		Message: "1 bus message(s) that the log refutes were dropped, never applied; the last at runSeq 7 " +
			"(the log has no event at that runSeq): something that is not the outbox relay publishes on the run's subject"})
	require.NotContains(t, alertCodes(s.alerts(t)), projector.AlertGap)
	require.Equal(t, int64(1), s.counterWith(t, "weft.projector.alerts", projector.AlertForged))
	requireLogged(t, s, `"alert":"PROJECTOR_FORGED_EVENT"`, `"level":"WARN"`, runID, `"run_seq":7`)

	// At a runSeq the log holds (here one the bus never carried), an event
	// with another id is refuted too, and the true one applies.
	other := s.approve(t, "other")
	s.waitRun(t, other, atSeq(1), "approved")
	s.appendLogOnly(t, lifecycle(t, other)[0])
	s.publish(t, forgedRunFailed(t, other, 2))
	s.waitForgedOr(t, 2, other, func(v api.RunView) bool { return v.Status == events.RunStatusFailed })
	v, _ = s.run(t, other)
	require.NotEqual(t, events.RunStatusFailed, v.Status, "the forged event at runSeq 2 is not applied")
	requireLogged(t, s, `"alert":"PROJECTOR_FORGED_EVENT"`, other, "another event id")
	s.appendBus(t, lifecycle(t, other)[1:]...)
	v = s.waitRun(t, other, atSeq(6), "the true events apply")
	require.Equal(t, events.RunStatusCompleted, v.Status)
	s.requireMatchesLog(t, v)
}

// A forged event far past the log's head (runSeq 300) opens no gap: the
// run never goes STALE and no P1 alert is raised; the run goes on.
func TestForgedEventAheadOfTheLog(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "ahead")
	s.waitRun(t, runID, atSeq(1), "approved")

	s.publish(t, forgedRunFailed(t, runID, 300))
	s.waitForgedOr(t, 1, runID, func(v api.RunView) bool { return v.Stale })
	v, _ := s.run(t, runID)
	require.False(t, v.Stale, "a runSeq the log does not have opens no gap")
	require.Equal(t, int64(1), v.LastEventSeq)
	require.NotContains(t, alertCodes(s.alerts(t)), projector.AlertGap)
	require.Zero(t, s.counterWith(t, "weft.projector.alerts", projector.AlertGap))

	s.appendBus(t, lifecycle(t, runID)...)
	v = s.waitRun(t, runID, atSeq(6), "completes")
	require.False(t, v.Stale)
	require.Equal(t, events.RunStatusCompleted, v.Status)
}

// A run left STALE on a runSeq the log does not have (as a projector
// without verification left one after a forged event) resumes at the next
// resync, which finds nothing past the watermark: the gap and its P1 alert
// clear.
func TestResyncClearsAGapTheLogDoesNotHave(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	runID := s.approve(t, "left-stale")
	s.appendBus(t, lifecycle(t, runID)...)
	s.serve(t, projector.Config{})
	s.waitRun(t, runID, atSeq(6), "completes")

	_, err := s.db.Pool.Exec(t.Context(),
		`UPDATE run_snapshots SET gap_seen_seq = 300, gap_since = now() WHERE run_id = $1`, runID)
	require.NoError(t, err)
	_, err = s.db.Pool.Exec(t.Context(), `INSERT INTO projector_alerts (alert_key, code, severity, run_id, tenant_id, message)
VALUES ($1, $2, 'P1', $3, $4, 'runSeq gap: applied up to 6, saw 300')`, projector.AlertGap+":"+runID, projector.AlertGap, runID, tenant)
	require.NoError(t, err)

	v := s.waitRun(t, runID, func(v api.RunView) bool { return !v.Stale }, "the gap closes")
	require.Equal(t, events.RunStatusCompleted, v.Status)
	require.Nil(t, v.Gap)
	require.Eventually(t, func() bool { return !slices.Contains(alertCodes(s.alerts(t)), projector.AlertGap) },
		waitFor, 10*time.Millisecond, "the gap alert clears")
}

// A forged message naming a run the log does not have is dropped and
// counted, and creates no snapshot row (and so no run in the gauges).
func TestForgedEventOfNoRun(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	ghost := events.NewRunID()

	s.publish(t, forgedRunFailed(t, ghost, 1))
	s.waitForged(t, 1)
	requireLogged(t, s, `"alert":"PROJECTOR_FORGED_EVENT"`, ghost, "the log has no such run")
	var n int
	require.NoError(t, s.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM run_snapshots WHERE run_id = $1`, ghost).Scan(&n))
	require.Zero(t, n, "no row for a run the log does not have")
	require.Equal(t, 404, s.get(t, readerToken, "/v1/runs/"+ghost, nil))
}

// A run's PROJECTOR_FORGED_EVENT alert clears ForgedAlertFor after the
// last forged message.
func TestForgedAlertExpires(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{ForgedAlertFor: time.Millisecond})
	runID := s.approve(t, "expires")
	s.waitRun(t, runID, atSeq(1), "approved")

	s.publish(t, forgedRunFailed(t, runID, 2))
	s.waitForged(t, 1)
	require.Eventually(t, func() bool { return !slices.Contains(alertCodes(s.alerts(t)), projector.AlertForged) },
		waitFor, 10*time.Millisecond, "the alert expires")
	requireLogged(t, s, `"alert":"PROJECTOR_FORGED_EVENT"`, `"cleared":true`)
	v, _ := s.run(t, runID)
	require.Equal(t, api.RunIdentity{TenantID: tenant, ProjectID: "proj", EnvironmentID: "dev", PlanID: "expires", PlanVersion: "v1"},
		v.RunIdentity)
	require.Equal(t, int64(1), v.LastEventSeq)
}

// terminations subscribes to the MSG_TERMINATED advisories of the
// projector's consumer: each says a message was settled for good, never
// to be redelivered.
func (s *stack) terminations(t *testing.T) *nats.Subscription {
	t.Helper()
	sub, err := s.nats.Conn(t).SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + streams.EventsStream + "." + projector.Consumer)
	require.NoError(t, err)
	return sub
}

// publishSeq publishes ev on its run's subject, as publish does, and
// returns its stream sequence.
func (s *stack) publishSeq(t *testing.T, ev events.Event) uint64 {
	t.Helper()
	subject, err := streams.EventSubject(ev.RunID, ev.EventType)
	require.NoError(t, err)
	data, err := json.Marshal(ev)
	require.NoError(t, err)
	ack, err := s.js.Publish(t.Context(), subject, data, jetstream.WithMsgID(events.NewRunID()))
	require.NoError(t, err)
	return ack.Sequence
}

// requireTerminated requires a termination advisory on sub of the
// message at stream sequence seq.
func requireTerminated(t *testing.T, sub *nats.Subscription, seq uint64) {
	t.Helper()
	for {
		msg, err := sub.NextMsg(waitFor)
		require.NoError(t, err, "the message at stream sequence %d is terminated", seq)
		var adv struct {
			StreamSeq uint64 `json:"stream_seq"`
		}
		require.NoError(t, json.Unmarshal(msg.Data, &adv))
		if adv.StreamSeq == seq {
			return
		}
	}
}
