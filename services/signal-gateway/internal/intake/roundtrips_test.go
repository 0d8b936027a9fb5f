package intake_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/weftest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

// An accepted signal costs three round trips (BEGIN with the lock of its
// run's head and the read of its state; its event with its acceptance
// record; the event's outbox row with COMMIT), all through one
// journal.Write; a repeat, answered from the acceptance record, writes
// nothing and costs two (the read, then COMMIT).
func TestSignalRoundTrips(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	pool, calls := db.CountedPool(t)
	in := intaketest.New(t, &weftest.DB{Pool: pool, URL: db.URL, Name: db.Name}, intake.Config{})
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
