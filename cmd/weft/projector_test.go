package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// `weft projector rebuild` projects every run of the log that has no
// snapshot, and reports it; the projector itself is tested in
// services/projector (issue 16, defect 3).
func TestProjectorRebuild(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	log := eventlog.New(db.Pool)
	runs := map[string][]events.Type{
		events.NewRunID(): {events.RunApproved, events.RunStarted, events.RunCompleted},
		events.NewRunID(): {events.RunApproved, events.RunStarted},
	}
	for runID, types := range runs {
		for _, typ := range types {
			ev, err := events.New(events.Spec{RunID: runID, Type: typ, PlanVersion: "v1"})
			require.NoError(t, err)
			_, err = eventlogtest.AppendLog(t.Context(), log, db.Pool, nil, ev)
			require.NoError(t, err)
		}
	}
	env := map[string]string{"WEFT_DATABASE_URL": db.URL}

	r := weft(t, env, "projector", "rebuild")
	require.NoError(t, r.err, r.errOut)
	require.True(t, strings.HasPrefix(r.out, "rebuilt 2 of the log's 2 runs in "), r.out)
	for runID := range runs {
		evs, err := log.EventsFetchAfter(t.Context(), runID, 0, 0)
		require.NoError(t, err)
		want, err := events.Project(runID, evs)
		require.NoError(t, err)
		var got json.RawMessage
		require.NoError(t, db.Pool.QueryRow(t.Context(),
			`SELECT snapshot FROM run_snapshots WHERE run_id = $1`, runID).Scan(&got))
		w, err := json.Marshal(want)
		require.NoError(t, err)
		require.JSONEq(t, string(w), string(got), "run %s", runID)
	}

	r = weft(t, env, "projector", "rebuild")
	require.NoError(t, r.err, r.errOut)
	require.True(t, strings.HasPrefix(r.out, "rebuilt 0 of the log's 2 runs in "), r.out)
}

// The batching waits of `weft relay` and `weft projector` are refused
// above their limits before anything is opened, by flag and by variable.
func TestBatchingWaitsRefuseValuesAboveTheirLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"relay", "--idle-grace", "101ms"}, nil, "weft relay --idle-grace: outbox: invalid relay config: IdleGrace"},
		{[]string{"relay"}, map[string]string{"WEFT_RELAY_IDLE_GRACE": "1s"}, "weft relay --idle-grace"},
		{[]string{"projector", "--batch-linger", "1001ms"}, nil, "weft projector --batch-linger: 1.001s is above the most allowed, 1s"},
		{[]string{"projector"}, map[string]string{"WEFT_PROJECTOR_BATCH_LINGER": "2s"}, "weft projector --batch-linger"},
	} {
		var out, errOut weftest.Buffer
		err := run(t.Context(), c.args, &out, &errOut, envOf(c.env))
		require.ErrorContains(t, err, c.want, "weft %v %v", c.args, c.env)
	}
}
