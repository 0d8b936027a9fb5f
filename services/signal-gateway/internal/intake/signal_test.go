package intake_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

func TestSignalAcceptedOnceAndReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)

	first, err := b.signal(t, runID, "go", ptr("sig-1"))
	require.NoError(t, err)
	require.False(t, first.Duplicate)
	require.True(t, first.Accepted)
	require.Equal(t, runID, first.WorkflowID)
	require.Equal(t, "sig-1", first.SignalID)
	require.Equal(t, b.clock.Now(), first.AcceptedAt)

	b.clock.Add(time.Hour)
	again, err := b.signal(t, runID, "go", ptr("sig-1"))
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, first.AcceptedSignalResult, again.AcceptedSignalResult, "a repeat gets the canonical first result")

	evs, outbox := b.accepted(t, runID)
	require.Equal(t, 1, evs)
	require.Equal(t, 1, outbox)
	last := b.eventsOf(t, runID)
	ev := last[len(last)-1]
	require.Equal(t, first.SignalStorageKey, ev.LogicalAttemptID, "the storage key names the payload event")
	var data events.SignalAcceptedData
	require.NoError(t, ev.Data(&data))
	require.JSONEq(t, `{"ok":true}`, string(data.Payload))
}

// TestSignalDurableReplayAfterCrash: the acceptance committed and the
// answer was lost (the gateway died before responding). A new gateway
// process answers the retry from the record.
func TestSignalDurableReplayAfterCrash(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	first, err := b.signal(t, runID, "go", ptr("sig-crash"))
	require.NoError(t, err)

	log := eventlog.New(b.db.Pool)
	fresh, err := intake.New(b.db.Pool, log, journal.New(log), auth.RoleAuthorizer{}, b.cfg) // a new process
	require.NoError(t, err)
	again, err := fresh.SignalSend(context.Background(), operator, intake.Signal{RunID: runID, Name: "go", ID: ptr("sig-crash")})
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, first.AcceptedSignalResult, again.AcceptedSignalResult)
	evs, _ := b.accepted(t, runID)
	require.Equal(t, 1, evs)
}

func TestSignalConcurrentDuplicatesEnqueueOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	const n = 16
	results := make([]intake.SignalResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			var err error
			results[i], err = b.signal(t, runID, "go", ptr("race"))
			require.NoError(t, err)
		})
	}
	close(start)
	wg.Wait()
	fresh := 0
	for _, r := range results {
		if !r.Duplicate {
			fresh++
		}
		require.Equal(t, results[0].AcceptedSignalResult, r.AcceptedSignalResult)
	}
	require.Equal(t, 1, fresh, "exactly one request accepts")
	evs, outbox := b.accepted(t, runID)
	require.Equal(t, 1, evs)
	require.Equal(t, 1, outbox)
}

func TestSignalWithoutIDIsNotIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	a, err := b.signal(t, runID, "go", nil)
	require.NoError(t, err)
	c, err := b.signal(t, runID, "go", nil)
	require.NoError(t, err)
	require.NotEqual(t, a.SignalID, c.SignalID, "each request without a signalId gets a fresh one")
	require.NotEmpty(t, a.SignalID)
	evs, _ := b.accepted(t, runID)
	require.Equal(t, 2, evs)
}

func TestSignalIDIsExactBytes(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	// Case, surrounding space and Unicode form all make different ids.
	ids := []string{"abc", "ABC", " abc", "abc ", "é", "e\u0301", "a:b", "a%3Ab", "a", "b:c"}
	keys := map[string]bool{}
	for _, id := range ids {
		res, err := b.signal(t, runID, "go", ptr(id))
		require.NoError(t, err, "%q", id)
		require.False(t, res.Duplicate, "%q must not collide with an earlier id", id)
		require.Equal(t, id, res.SignalID, "never trimmed or normalised")
		require.False(t, keys[res.SignalStorageKey])
		keys[res.SignalStorageKey] = true
	}
	evs, _ := b.accepted(t, runID)
	require.Equal(t, len(ids), evs)
}

// TestSignalKeyReservedCharacters: ':' and '%' in names and ids cannot make
// two signals share a storage key.
func TestSignalKeyReservedCharacters(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.runWaiting(t, "go", "go:x")
	pairs := [][2]string{{"go", "x:1"}, {"go:x", "1"}, {"go", "x%3A1"}, {"go", "x%253A1"}, {"go", "x|1"}}
	keys := map[string]string{}
	for _, p := range pairs {
		res, err := b.signal(t, runID, p[0], ptr(p[1]))
		require.NoError(t, err)
		require.False(t, res.Duplicate)
		prev, dup := keys[res.SignalStorageKey]
		require.False(t, dup, "%v collides with %s", p, prev)
		keys[res.SignalStorageKey] = p[0] + "/" + p[1]
		require.Equal(t, 4, strings.Count(res.SignalStorageKey, ":"), "escaped components hold no ':' of their own: %s", res.SignalStorageKey)
	}
}

func TestSignalNameAndIDTogetherIdentify(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	a, err := b.signal(t, runID, "PAUSE", ptr("same"))
	require.NoError(t, err)
	c, err := b.signal(t, runID, "RESUME", ptr("same"))
	require.NoError(t, err)
	require.False(t, c.Duplicate)
	require.NotEqual(t, a.SignalStorageKey, c.SignalStorageKey)
}

// TestSignalPayloadWithoutRecordIsIndeterminate builds, by hand, the state
// a crash between the payload append and the record would leave.
func TestSignalPayloadWithoutRecordIsIndeterminate(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	ev, err := events.New(events.Spec{RunID: runID, Type: events.SignalAccepted, PlanVersion: "1", EmittedAt: b.clock.Now(),
		LogicalAttemptID: "sig:" + runID + ":go:orphan:1",
		Data:             events.SignalAcceptedData{SignalName: "go", SignalID: "orphan", Payload: json.RawMessage(`{"secret":"payload-value"}`)}})
	require.NoError(t, err)
	_, err = eventlogtest.Append(context.Background(), journal.New(b.log), b.db.Pool, nil, ev)
	require.NoError(t, err)
	before := len(b.eventsOf(t, runID))

	_, err = b.signal(t, runID, "go", ptr("orphan"))
	ierr := intaketest.RequireRefused(t, err, api.CodeSignalAcceptanceIndeterminate, "")
	require.Equal(t, runID, ierr.Details["workflowId"])
	require.Equal(t, "go", ierr.Details["signalName"])
	require.Equal(t, "orphan", ierr.Details["signalId"])
	require.NotEmpty(t, ierr.Details["correlationId"])
	out, _ := json.Marshal(ierr.API())
	require.NotContains(t, string(out), "payload-value", "the fault never carries the payload")
	require.Len(t, b.eventsOf(t, runID), before, "nothing enqueued")
	require.Zero(t, b.count(t, `SELECT count(*) FROM signal_acceptances WHERE signal_id = 'orphan'`))

	// Once the orphan's retention has passed, the signal is new again.
	b.clock.Add(b.in.Config().SignalRetention)
	res, err := b.signal(t, runID, "go", ptr("orphan"))
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(res.SignalStorageKey, ":2"), res.SignalStorageKey)
}

func TestSignalRetentionExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{SignalRetention: time.Hour})
	runID := b.run(t)
	first, err := b.signal(t, runID, "go", ptr("kept"))
	require.NoError(t, err)

	b.clock.Add(59 * time.Minute)
	n, err := b.in.ExpiredDelete(context.Background(), 10)
	require.NoError(t, err)
	require.Zero(t, n, "nothing has expired yet")
	again, err := b.signal(t, runID, "go", ptr("kept"))
	require.NoError(t, err)
	require.True(t, again.Duplicate)

	b.clock.Add(time.Minute)
	n, err = b.in.ExpiredDelete(context.Background(), 1)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Zero(t, b.count(t, `SELECT count(*) FROM signal_acceptances`))

	later, err := b.signal(t, runID, "go", ptr("kept"))
	require.NoError(t, err)
	require.False(t, later.Duplicate, "after retention the tuple is a new request")
	require.NotEqual(t, first.SignalStorageKey, later.SignalStorageKey)
	evs, outbox := b.accepted(t, runID)
	require.Equal(t, 2, evs)
	require.Equal(t, 2, outbox)
}

// TestSignalExpiredRecordNotYetDeleted: a record past its expiry answers
// nothing even before the retention job removes it.
func TestSignalExpiredRecordNotYetDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{SignalRetention: time.Hour})
	runID := b.run(t)
	_, err := b.signal(t, runID, "go", ptr("x"))
	require.NoError(t, err)
	b.clock.Add(time.Hour)
	res, err := b.signal(t, runID, "go", ptr("x"))
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM signal_acceptances`))
}

// TestSignalRetentionChangedBetweenRepeats: a signal's acceptance lasts as
// long as the retention in force when it was accepted. Lengthened later, a
// repeat after the old expiry is a new signal (not indeterminate); shortened
// later, a repeat within the old expiry is still a duplicate.
func TestSignalRetentionChangedBetweenRepeats(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{SignalRetention: time.Hour})
	runID := b.run(t)
	first, err := b.signal(t, runID, "go", ptr("lengthened"))
	require.NoError(t, err)
	b.clock.Add(2 * time.Hour)
	n, err := b.in.ExpiredDelete(context.Background(), 10)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	longer := b.withRetention(t, 24*time.Hour)
	res, err := longer.SignalSend(context.Background(), operator, intake.Signal{RunID: runID, Name: "go", ID: ptr("lengthened")})
	require.NoError(t, err, "accepted under a 1h retention, expired: new under a 24h one")
	require.False(t, res.Duplicate)
	require.NotEqual(t, first.SignalStorageKey, res.SignalStorageKey)
	require.True(t, strings.HasSuffix(res.SignalStorageKey, ":2"), res.SignalStorageKey)

	kept, err := longer.SignalSend(context.Background(), operator, intake.Signal{RunID: runID, Name: "go", ID: ptr("shortened")})
	require.NoError(t, err)
	b.clock.Add(2 * time.Hour)
	again, err := b.in.SignalSend(context.Background(), operator, intake.Signal{RunID: runID, Name: "go", ID: ptr("shortened")})
	require.NoError(t, err, "accepted under 24h, repeated 2h later under a 1h retention")
	require.True(t, again.Duplicate)
	require.Equal(t, kept.SignalStorageKey, again.SignalStorageKey)
}

// withRetention returns another intake on b's database and clock with the
// signal retention changed, as after a restart with a new setting.
func (b *bundle) withRetention(t *testing.T, d time.Duration) *intake.Intake {
	t.Helper()
	cfg := b.cfg
	cfg.SignalRetention = d
	in, err := intake.New(b.db.Pool, b.log, journal.New(b.log), auth.RoleAuthorizer{}, cfg)
	require.NoError(t, err)
	return in
}
