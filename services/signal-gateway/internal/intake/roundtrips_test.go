package intake_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

// counted returns an Intake over a fresh database whose connections
// count their round trips in the returned Calls.
func counted(t *testing.T) (*intake.Intake, *weftest.Calls) {
	t.Helper()
	db := weftest.NewDB(t)
	pool, calls := db.CountedPool(t)
	return intaketest.New(t, &weftest.DB{Pool: pool, URL: db.URL, Name: db.Name}, intake.Config{}), calls
}

// A new start costs three round trips (BEGIN with the run request's
// claim, the approval's writes, its outbox row with COMMIT); a repeat
// reads the earlier start's run in the same transaction.
func TestRunStartRoundTrips(t *testing.T) {
	t.Parallel()
	in, calls := counted(t)
	ctx := context.Background()
	_, err := in.RunStart(ctx, operator, startReq("warm-up")) // prepares the statements
	require.NoError(t, err)

	before := calls.N()
	first, err := in.RunStart(ctx, operator, startReq("req-1"))
	require.NoError(t, err)
	require.True(t, first.Created)
	require.Equal(t, 3, calls.N()-before)

	again, err := in.RunStart(ctx, operator, startReq("req-1"))
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, first.RunID, again.RunID)
}

// An accepted signal costs three round trips (BEGIN with the lock of its
// run's head and the read of its state; its event with its acceptance
// record; the event's outbox row with COMMIT), all through one
// journal.Write; a repeat, answered from the acceptance record, writes
// nothing and costs two (the read, then COMMIT).
func TestSignalRoundTrips(t *testing.T) {
	t.Parallel()
	in, calls := counted(t)
	ctx := context.Background()
	send := func(runID, id string) intake.SignalResult {
		t.Helper()
		res, err := in.SignalSend(ctx, operator, intake.Signal{RunID: runID, Name: "go", ID: &id, Payload: json.RawMessage(`{"ok":true}`)})
		require.NoError(t, err)
		return res
	}
	start := func() string {
		t.Helper()
		res, err := in.RunStart(ctx, operator, startReq(events.NewRunID()))
		require.NoError(t, err)
		return res.RunID
	}
	send(start(), "warm-up") // prepares the statements
	runID := start()

	before := calls.N()
	first := send(runID, "s1")
	require.Equal(t, 3, calls.N()-before, "an accepted signal")

	before = calls.N()
	again := send(runID, "s1")
	require.Equal(t, first.SignalStorageKey, again.SignalStorageKey)
	require.Equal(t, 2, calls.N()-before, "a repeat")
}
