package journal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/weftest"
)

// TestAppendCountsEventsByType: weft.events.appended counts each newly
// persisted event under its type, and a repeat of an idempotency key,
// which persists nothing, adds nothing.
func TestAppendCountsEventsByType(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	mp, h, err := metrics.New()
	require.NoError(t, err)
	m, err := journal.NewMetrics(mp)
	require.NoError(t, err)
	j := journal.New(eventlog.New(db.Pool), journal.WithMetrics(m))
	runID := events.NewRunID()
	started := newEvent(t, runID, "", events.RunStarted)
	evs := []events.Event{started, newEvent(t, runID, "a", events.StepScheduled), newEvent(t, runID, "b", events.StepScheduled)}

	_, err = eventlogtest.Append(t.Context(), j, db.Pool, nil, evs...)
	require.NoError(t, err)
	_, err = eventlogtest.Append(t.Context(), j, db.Pool, nil, started) // a duplicate key: persists nothing
	require.NoError(t, err)

	s := metricstest.Get(t, h)
	require.Equal(t, int64(1), s.Count(t, "weft_events_appended_total", map[string]string{"event_type": "RunStarted"}))
	require.Equal(t, int64(2), s.Count(t, "weft_events_appended_total", map[string]string{"event_type": "StepScheduled"}))
	require.Equal(t, int64(3), s.Count(t, "weft_events_appended_total", nil))
}

// TestNilMetricsCountNothing: without a MeterProvider there are no
// instruments, and a Journal with nil Metrics appends as before.
func TestNilMetricsCountNothing(t *testing.T) {
	t.Parallel()
	m, err := journal.NewMetrics(nil)
	require.NoError(t, err)
	require.Nil(t, m)
	db := weftest.NewDB(t)
	j := journal.New(eventlog.New(db.Pool), journal.WithMetrics(m))
	res, err := eventlogtest.Append(t.Context(), j, db.Pool, nil, newEvent(t, events.NewRunID(), "", events.RunStarted))
	require.NoError(t, err)
	require.True(t, res[0].Persisted)
}
