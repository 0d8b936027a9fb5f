package intake_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

func TestSignalRateLimitAtItsEdge(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{MaxSignalsPerRunMinute: 5})
	runID := b.run(t)
	for i := range 5 {
		_, err := b.signal(t, runID, "go", ptr(strings.Repeat("x", i+1)))
		require.NoError(t, err, "signal %d of 5", i+1)
		b.clock.Add(time.Second)
	}
	_, err := b.signal(t, runID, "go", ptr("sixth"))
	ierr := intaketest.RequireRefused(t, err, api.CodeRateLimited, "")
	require.Equal(t, 55*time.Second, ierr.RetryAfter, "the oldest leaves the window 60s after it came")
	require.Equal(t, 55, ierr.Details["retryAfter"])

	// A duplicate is answered, not counted.
	dup, err := b.signal(t, runID, "go", ptr("x"))
	require.NoError(t, err)
	require.True(t, dup.Duplicate)

	// Another run has its own budget.
	_, err = b.signal(t, b.run(t), "go", ptr("sixth"))
	require.NoError(t, err)

	b.clock.Add(55 * time.Second)
	_, err = b.signal(t, runID, "go", ptr("sixth"))
	require.NoError(t, err, "the window slid past the oldest")
	evs, _ := b.accepted(t, runID)
	require.Equal(t, 6, evs)
}

func TestSignalPayloadLimitAtItsEdge(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{MaxSignalPayloadBytes: 100})
	runID := b.run(t)
	payload := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("a", n-2) + `"`) }
	_, err := b.in.SignalSend(context.Background(), operator, intake.Signal{RunID: runID, Name: "go", ID: ptr("fits"), Payload: payload(100)})
	require.NoError(t, err)
	_, err = b.in.SignalSend(context.Background(), operator, intake.Signal{RunID: runID, Name: "go", ID: ptr("over"), Payload: payload(101)})
	intaketest.RequireRefused(t, err, api.CodePayloadTooLarge, "")
	evs, _ := b.accepted(t, runID)
	require.Equal(t, 1, evs)
}

func TestSignalValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.runWaiting(t, "go", "go';DROP_TABLE_run_events;--")
	cases := []struct {
		name string
		sig  intake.Signal
		code string
	}{
		{"empty signalId", intake.Signal{RunID: runID, Name: "go", ID: ptr("")}, api.CodeInvalidArgument},
		{"signalId of 129 bytes", intake.Signal{RunID: runID, Name: "go", ID: ptr(strings.Repeat("é", 64) + "x")}, api.CodeInvalidArgument},
		{"signalId with NUL", intake.Signal{RunID: runID, Name: "go", ID: ptr("a\x00b")}, api.CodeInvalidArgument},
		{"empty name", intake.Signal{RunID: runID, Name: ""}, api.CodeInvalidArgument},
		{"name of 129 bytes", intake.Signal{RunID: runID, Name: strings.Repeat("n", 129)}, api.CodeInvalidArgument},
		{"name with a space", intake.Signal{RunID: runID, Name: "go on"}, api.CodeInvalidArgument},
		{"name with a wildcard", intake.Signal{RunID: runID, Name: "go.*"}, api.CodeInvalidArgument},
		{"run id not a UUID", intake.Signal{RunID: "run-1", Name: "go"}, api.CodeInvalidArgument},
		{"run id in upper case", intake.Signal{RunID: strings.ToUpper(runID), Name: "go"}, api.CodeInvalidArgument},
		{"run id as a subject wildcard", intake.Signal{RunID: "*", Name: "go"}, api.CodeInvalidArgument},
		{"payload with \\u0000", intake.Signal{RunID: runID, Name: "go", Payload: json.RawMessage(`"a\u0000"`)}, api.CodeInvalidArgument},
		{"SQL in the name", intake.Signal{RunID: runID, Name: "go';DROP_TABLE_run_events;--"}, ""},
		{"missing run", intake.Signal{RunID: events.NewRunID(), Name: "go"}, api.CodeNotFound},
	}
	for _, c := range cases {
		_, err := b.in.SignalSend(context.Background(), operator, c.sig)
		if c.code == "" {
			require.NoError(t, err, c.name)
			continue
		}
		intaketest.RequireRefused(t, err, c.code, "")
	}
	evs, _ := b.accepted(t, runID)
	require.Equal(t, 1, evs, "only the valid signal was persisted")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM signal_acceptances`))

	// A signalId of exactly 128 bytes is fine.
	_, err := b.signal(t, runID, "go", ptr(strings.Repeat("é", 64)))
	require.NoError(t, err)
}

func TestSignalAcrossTenantsIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	before := len(b.eventsOf(t, runID))
	_, err := b.in.SignalSend(context.Background(), stranger, intake.Signal{RunID: runID, Name: "go", ID: ptr("x")})
	ierr := intaketest.RequireRefused(t, err, api.CodeNotFound, "")
	missing, err2 := b.in.SignalSend(context.Background(), stranger, intake.Signal{RunID: events.NewRunID(), Name: "go"})
	require.Equal(t, intake.SignalResult{}, missing)
	other := intaketest.RequireRefused(t, err2, api.CodeNotFound, "")
	require.Equal(t, ierr.Message[:4], other.Message[:4], "a foreign run reads like a missing one")
	require.Len(t, b.eventsOf(t, runID), before, "nothing recorded")
}

func TestSignalDeniedIsRecordedAsRejected(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	for range 2 { // a retried denial is recorded once
		_, err := b.in.SignalSend(context.Background(), viewer, intake.Signal{RunID: runID, Name: "PAUSE", ID: ptr("v-1")})
		ierr := intaketest.RequireRefused(t, err, api.CodePermissionDenied, "")
		require.Contains(t, ierr.Message, "viewer")
	}
	evs := b.eventsOf(t, runID)
	last := evs[len(evs)-1]
	require.Equal(t, events.SignalRejected, last.EventType)
	var data events.SignalRejectedData
	require.NoError(t, last.Data(&data))
	require.Equal(t, "PAUSE", data.SignalName)
	require.Equal(t, "v-1", data.SignalID)
	require.Contains(t, data.Reason, "viewer")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM run_events WHERE event_type = 'SignalRejected'`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM signal_acceptances`))
}

func TestNewRefusesRetentionShorterThanTheRateWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	_, err := intake.New(b.db.Pool, b.log, journal.New(b.log), nil, intake.Config{SignalRetention: 30 * time.Second})
	require.ErrorContains(t, err, "rate window")
}
