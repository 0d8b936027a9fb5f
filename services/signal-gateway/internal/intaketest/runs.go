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

// PutSnapshot writes run runID's snapshot row as the projector would for
// a run of tenant acme's plan hello@1 in status with labels (a JSON
// object), created at: what the bulk jobs match runs against.
func PutSnapshot(t testing.TB, pool *pgxpool.Pool, runID string, status events.RunStatus, labels string, at time.Time) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO run_snapshots (run_id, tenant_id, plan_id, plan_version, status,
		last_event_seq, snapshot, labels, created_at) VALUES ($1, 'acme', 'hello', '1', $2, 1, '{"steps":[]}', $3::jsonb, $4)
		ON CONFLICT (run_id) DO UPDATE SET tenant_id = 'acme', plan_id = 'hello', plan_version = '1', status = $2,
		snapshot = '{"steps":[]}', labels = $3::jsonb, created_at = $4`, runID, string(status), labels, at)
	require.NoError(t, err)
}

// SignalsAccepted counts, for each of runs, the signals named name its
// log accepted; a run with none is left out.
func SignalsAccepted(t testing.TB, pool *pgxpool.Pool, runs []string, name string) map[string]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT run_id::text, count(*) FROM run_events
		WHERE run_id = ANY($1::uuid[]) AND event_type = 'SignalAccepted' AND event_data->>'signalName' = $2 GROUP BY run_id`, runs, name)
	require.NoError(t, err)
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	require.NoError(t, err)
	return out
}
