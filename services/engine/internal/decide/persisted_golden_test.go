package decide

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// stepScheduledGolden is the StepScheduled payload the decider writes for a
// waitSignal step with a timeout, as recorded in
// testdata/persisted/StepScheduled_wait.json. WEFT_UPDATE_GOLDEN=1
// rewrites the file; review the diff (docs/persisted-format.md).
func stepScheduledGolden() stepScheduledData {
	return stepScheduledData{
		StepScheduledData: events.StepScheduledData{Activity: "", Queue: ""},
		Deadline:          time.Date(2024, 7, 1, 12, 5, 0, 0, time.UTC),
	}
}

// TestPersistedGoldenStepScheduled: the engine-private StepScheduled
// payload decodes, with today's reader, to its fields, a golden written
// by pkg/events' StepScheduledData decodes into it too, and today's
// writer still writes the golden byte for byte.
func TestPersistedGoldenStepScheduled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		v    stepScheduledData
	}{
		{"StepScheduled_wait", stepScheduledGolden()},
		{"StepScheduled_activity", stepScheduledData{StepScheduledData: events.StepScheduledData{Activity: "dbt.run", Queue: "default"}}},
		{"StepScheduled_forEach", stepScheduledData{StepScheduledData: events.StepScheduledData{Activity: "reserve", Queue: "default",
			Input: json.RawMessage(`[{"sku":"tea"},{"sku":"jam"}]`), ForEach: &events.ForEachData{Count: 2, MaxParallel: 10, FailFast: true}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			written, err := events.MarshalData(c.v)
			require.NoError(t, err)
			golden := goldentest.Compare(t, filepath.Join("testdata", "persisted", c.name+".json"), written)

			var got stepScheduledData
			require.NoError(t, events.Event{EventData: golden}.Data(&got))
			require.Equal(t, c.v, got)
		})
	}
	// The activity form is exactly pkg/events' StepScheduledData, so the
	// projector and the engine read each other's records.
	shared, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "pkg", "events", "testdata", "persisted", "StepScheduled.json"))
	require.NoError(t, err)
	var got stepScheduledData
	require.NoError(t, events.Event{EventData: shared}.Data(&got))
	require.Equal(t, stepScheduledData{StepScheduledData: events.StepScheduledData{Activity: "dbt.run", Queue: "default"}}, got)
}

// TestPersistedUnknownFieldsStepScheduled: a newer writer's extra field in
// the payload is ignored.
func TestPersistedUnknownFieldsStepScheduled(t *testing.T) {
	t.Parallel()
	var got stepScheduledData
	e := events.Event{EventData: json.RawMessage(`{"activity":"","queue":"","deadline":"2024-07-01T12:05:00Z","addedByANewerWeft":{"x":[1]}}`)}
	require.NoError(t, e.Data(&got))
	require.Equal(t, stepScheduledGolden(), got)
}

// TestFoldSkipsUnknownEventType: an event type this version does not know,
// run-level or naming a step of the plan, with a payload it could not
// decode, changes nothing but Head, and the fold goes on past it.
func TestFoldSkipsUnknownEventType(t *testing.T) {
	t.Parallel()
	p := foldPlan()
	known := []events.Event{
		ev(t, 1, events.RunApproved, "", "", nil),
		ev(t, 2, events.RunStarted, "", "", nil),
		ev(t, 3, events.StepScheduled, "a", "1", nil),
	}
	want, err := Fold(p, known)
	require.NoError(t, err)

	runLevel := ev(t, 4, "RunAnnotatedV2", "", "", nil)
	runLevel.EventData = json.RawMessage(`"not an object"`)
	stepLevel := ev(t, 5, "StepHeartbeatV2", "a", "1", nil)
	stepLevel.EventData = json.RawMessage(`[1,2,3]`)
	got, err := Fold(p, append(known, runLevel, stepLevel))
	require.NoError(t, err)
	want.Head = 5
	require.Equal(t, want, got)

	after, err := got.Apply(ev(t, 6, events.StepStarted, "a", "1", nil))
	require.NoError(t, err)
	require.Equal(t, events.StepStatusRunning, after.Steps["a"].Status, "the fold goes on after an unknown type")
}

// TestPersistedGoldenStepSkippedCondition: the StepSkipped payload of a
// false condition decodes, with today's reader, to its fields and, with
// pkg/events' reader (the projector's), to the plain reason; today's
// writer writes the golden byte for byte.
func TestPersistedGoldenStepSkippedCondition(t *testing.T) {
	t.Parallel()
	want := stepSkippedData{StepSkippedData: events.StepSkippedData{Reason: `dependency "express" was skipped`}, Condition: "express"}
	written, err := events.MarshalData(want)
	require.NoError(t, err)
	golden := goldentest.Compare(t, filepath.Join("testdata", "persisted", "StepSkipped_condition.json"), written)
	var got stepSkippedData
	require.NoError(t, events.Event{EventData: golden}.Data(&got))
	require.Equal(t, want, got)
	var plain events.StepSkippedData
	require.NoError(t, events.Event{EventData: golden}.Data(&plain))
	require.Equal(t, want.StepSkippedData, plain)
}
