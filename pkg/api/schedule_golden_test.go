package api_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// The gateway stores SkippedFires in schedules.recent_skips and a
// FireWindow in schedules.buffered_window, and writes ScheduleFireInput
// into the RunApproved of the runs schedules start (ScheduledRunInput and
// TriggeredRunInput before issue 18); a trigger's stored input expression
// reads a TriggerInputEvent. A new build must read what an old one wrote
// (docs/persisted-format.md).

var goldenAt = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func skippedGolden() []api.SkippedFires {
	return []api.SkippedFires{
		{Reason: api.SkipMisfire, From: goldenAt, To: goldenAt.Add(3 * time.Hour), Count: 4, RecordedAt: goldenAt.Add(5 * time.Hour)},
		{Reason: api.SkipRefused, From: goldenAt, To: goldenAt, Count: 1, RecordedAt: goldenAt, Message: "InvalidArgument: plan has no steps"},
	}
}

func scheduledGolden() api.ScheduledRunInput {
	return api.ScheduledRunInput{ScheduleID: "nightly", ScheduledFor: goldenAt.Add(4 * time.Hour),
		Window: &api.FireWindow{From: goldenAt, To: goldenAt.Add(4 * time.Hour), MissedCount: 4}, Input: json.RawMessage(`{"report":"daily"}`)}
}

func fireGolden() api.ScheduleFireInput {
	return api.ScheduleFireInput{ScheduledFor: goldenAt.Add(4 * time.Hour), Schedule: api.FiredSchedule{ID: "nightly",
		Window: &api.FireWindow{From: goldenAt, To: goldenAt.Add(4 * time.Hour), MissedCount: 4}}}
}

func triggerEventGolden() api.TriggerInputEvent {
	return api.TriggerInputEvent{ID: "evt_1", TriggerID: "orders", Payload: json.RawMessage(`{"order":4711}`)}
}

func triggeredGolden() api.TriggeredRunInput {
	return api.TriggeredRunInput{TriggerID: "orders", EventID: "evt_1", Payload: json.RawMessage(`{"order":4711}`)}
}

func TestPersistedGoldenSchedules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		value any
		read  func([]byte) (any, error)
	}{
		{"SkippedFires.json", skippedGolden(), func(b []byte) (any, error) {
			var v []api.SkippedFires
			return v, json.Unmarshal(b, &v)
		}},
		{"ScheduledRunInput.json", scheduledGolden(), func(b []byte) (any, error) {
			var v api.ScheduledRunInput
			return v, json.Unmarshal(b, &v)
		}},
		{"TriggeredRunInput.json", triggeredGolden(), func(b []byte) (any, error) {
			var v api.TriggeredRunInput
			return v, json.Unmarshal(b, &v)
		}},
		{"ScheduleFireInput.json", fireGolden(), func(b []byte) (any, error) {
			var v api.ScheduleFireInput
			return v, json.Unmarshal(b, &v)
		}},
		{"TriggerInputEvent.json", triggerEventGolden(), func(b []byte) (any, error) {
			var v api.TriggerInputEvent
			return v, json.Unmarshal(b, &v)
		}},
	} {
		written, err := json.Marshal(tc.value)
		require.NoError(t, err)
		golden := goldentest.Compare(t, filepath.Join("testdata", "persisted", tc.file), written)
		got, err := tc.read(golden)
		require.NoError(t, err, tc.file)
		require.Equal(t, tc.value, got, tc.file)
	}
}

func TestPersistedUnknownFieldsSchedules(t *testing.T) {
	t.Parallel()
	var in api.ScheduledRunInput
	require.NoError(t, json.Unmarshal([]byte(`{"scheduleId":"nightly","scheduledFor":"2026-03-01T13:00:00Z",`+
		`"window":{"from":"2026-03-01T09:00:00Z","to":"2026-03-01T13:00:00Z","missedCount":4,"later":1},`+
		`"input":{"report":"daily"},"addedByANewerWeft":true}`), &in))
	require.Equal(t, scheduledGolden(), in)
	var fire api.ScheduleFireInput
	require.NoError(t, json.Unmarshal([]byte(`{"scheduledFor":"2026-03-01T13:00:00Z","report":"daily",`+
		`"schedule":{"id":"nightly","window":{"from":"2026-03-01T09:00:00Z","to":"2026-03-01T13:00:00Z","missedCount":4},"x":1}}`), &fire))
	require.Equal(t, fireGolden(), fire, "the schedule's own keys sit beside the fire's")
	var skips []api.SkippedFires
	require.NoError(t, json.Unmarshal([]byte(`[{"reason":"misfire","from":"2026-03-01T09:00:00Z","to":"2026-03-01T12:00:00Z",`+
		`"count":4,"recordedAt":"2026-03-01T14:00:00Z","x":[]}]`), &skips))
	require.Equal(t, skippedGolden()[:1], skips)
}
