package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/periodic"
)

// snapshotBound bounds the wait for the read model to match the log once
// the runs have ended: the projector may still be catching up or
// resyncing.
const snapshotBound = 2 * time.Minute

// checkSnapshots compares each run's snapshot in the read API with the fold
// of its log (events.Project), ignoring timestamps (see sameSnapshot). A run
// that differs is checked again until it matches or snapshotBound passes.
func checkSnapshots(ctx context.Context, top *topology, c *client.Client) (checkResult, error) {
	res := checkResult{Name: "every snapshot equals the fold of its log", OK: true}
	rows, err := top.admin.Query(ctx, `SELECT run_id::text FROM run_events WHERE event_type = 'RunApproved'`)
	if err != nil {
		return res, fmt.Errorf("snapshots: %w", err)
	}
	pending, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return res, fmt.Errorf("snapshots: %w", err)
	}
	store := eventlog.New(top.admin)
	why := map[string]string{}
	deadline := time.Now().Add(snapshotBound)
	for len(pending) > 0 {
		var again []string
		for _, run := range pending {
			diff, err := compareSnapshot(ctx, store, c, run)
			if err != nil {
				return res, err
			}
			if diff != "" {
				why[run] = diff
				again = append(again, run)
			}
		}
		pending = again
		if len(pending) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		_ = periodic.Sleep(ctx, 2*time.Second)
	}
	for _, run := range pending {
		res.add("%s: %s", run, why[run])
	}
	res.Note = "timestamps are not compared (the read model may take them from the bus copy of an event)"
	return res, nil
}

// compareSnapshot returns "" when run's snapshot in the read API equals
// the fold of its log, else what differs.
func compareSnapshot(ctx context.Context, store *eventlog.Store, c *client.Client, run string) (string, error) {
	evs, err := store.EventsFetchAfter(ctx, run, 0, 1_000_000)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", run, err)
	}
	want, err := events.Project(run, evs)
	if err != nil {
		return "fold: " + err.Error(), nil //nolint:nilerr // a log that does not fold is a violation, not a soak error
	}
	view, err := c.GetRun(ctx, run, client.AllSteps()) // every step, to compare with the log
	if err != nil {
		return "read API: " + err.Error(), nil //nolint:nilerr // not served yet: checked again until the bound
	}
	if view.Stale {
		return "read API: stale", nil
	}
	return sameSnapshot(want, view.RunSnapshot)
}

// sameSnapshot compares two snapshots as JSON documents without their
// timestamps and durations, and returns "" when they are equal.
func sameSnapshot(want, got events.RunSnapshot) (string, error) {
	w, err := timeless(want)
	if err != nil {
		return "", err
	}
	g, err := timeless(got)
	if err != nil {
		return "", err
	}
	if reflect.DeepEqual(w, g) {
		return "", nil
	}
	wj, _ := json.Marshal(w)
	gj, _ := json.Marshal(g)
	return fmt.Sprintf("read API %s, log fold %s", gj, wj), nil
}

// timeKeys are the snapshot fields left out of the comparison.
var timeKeys = []string{"startedAt", "completedAt", "totalDurationMs"}

// timeless returns s as a generic JSON document without timeKeys, in the
// run and in each step.
func timeless(s events.RunSnapshot) (map[string]any, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	for _, k := range timeKeys {
		delete(m, k)
	}
	if steps, ok := m["steps"].([]any); ok {
		for _, st := range steps {
			if sm, ok := st.(map[string]any); ok {
				for _, k := range timeKeys {
					delete(sm, k)
				}
			}
		}
	}
	return m, nil
}
