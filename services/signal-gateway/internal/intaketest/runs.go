package intaketest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
)

// PlanWaitingFor is a plan document of plan "hello" version "1": an
// activity step "a", then one waitSignal step per name ("w0", "w1", …)
// after it, waiting for that name.
func PlanWaitingFor(names ...string) json.RawMessage {
	steps := []string{`{"id":"a","activity":"echo"}`}
	for i, n := range names {
		name, err := json.Marshal(n)
		if err != nil {
			panic(err) // a string always encodes
		}
		steps = append(steps, fmt.Sprintf(`{"id":"w%d","kind":"waitSignal","signal":%s,"dependsOn":["a"]}`, i, name))
	}
	return json.RawMessage(`{"planId":"hello","planVersion":"1","steps":[` + strings.Join(steps, ",") + `]}`)
}

// EndRunTx appends to runID's log, in tx, the event end (RunCompleted,
// RunFailed or RunCancelled) and removes the run from engine_runs, as the
// engine's round that ends a run does. The append takes the run's head
// lock, which tx then holds until it ends.
func EndRunTx(t testing.TB, tx pgx.Tx, runID string, end events.Type) {
	t.Helper()
	ctx := context.Background()
	var data any = events.RunCompletedData{}
	if end != events.RunCompleted {
		data = events.RunCancelledData{Reason: "ended by the test"} // RunFailedData has the same reason
	}
	ev, err := events.New(events.Spec{RunID: runID, Type: end, PlanVersion: "1", EmittedAt: time.Now().UTC(), Data: data})
	require.NoError(t, err)
	_, err = eventlogtest.AppendLog(ctx, eventlog.New(nil), tx, nil, ev)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `DELETE FROM engine_runs WHERE run_id = $1`, runID)
	require.NoError(t, err)
}

// EndRun is EndRunTx in a transaction of its own, committed.
func EndRun(t testing.TB, pool *pgxpool.Pool, runID string, end events.Type) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		EndRunTx(t, tx, runID, end)
		return nil
	}))
}
