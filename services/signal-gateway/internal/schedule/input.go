package schedule

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// The run's input (docs/schedules.md, "The run's input"): the schedule's
// input, a JSON object, with the keys the fire sets
// (api.ScheduleFireInput): scheduledFor and schedule, {id, window?}.

// checkInput refuses, as an InvalidArgument about input, a schedule's
// input that is not a JSON object (absent and null are none) or that
// holds a key a fire sets.
func checkInput(input json.RawMessage) error {
	members, err := inputMembers(input)
	if err != nil {
		return err
	}
	for _, k := range []string{api.FireKeyScheduledFor, api.FireKeySchedule} {
		if _, ok := members[k]; ok {
			return intake.Invalid("input", "must not hold %q: each fire sets it in the run's input", k)
		}
	}
	return nil
}

// inputMembers decodes a schedule's input into its members: none for an
// absent or null input. Anything but an object is refused.
func inputMembers(input json.RawMessage) (map[string]json.RawMessage, error) {
	members := map[string]json.RawMessage{}
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return members, nil
	}
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &members) != nil {
		return nil, intake.Invalid("input", "must be a JSON object: each fire adds %q and %q to it to make the run's input",
			api.FireKeyScheduledFor, api.FireKeySchedule)
	}
	return members, nil
}

// runInput is the input of the run f starts: sch's input with the fire's
// keys set, which win over the input's own (a schedule stored before
// checkInput may hold them), in key order. A stored input that is not an
// object is refused with an *intake.Error, and the fire is recorded as a
// refused skip.
func runInput(sch api.Schedule, f Fire) (json.RawMessage, error) {
	members, err := inputMembers(sch.Input)
	if err != nil {
		return nil, err
	}
	fire, err := json.Marshal(api.ScheduleFireInput{ScheduledFor: f.ScheduledFor.UTC(),
		Schedule: api.FiredSchedule{ID: sch.ScheduleID, Window: f.Window}})
	if err == nil {
		err = json.Unmarshal(fire, &members)
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: encode the fire: %w", err)
	}
	return json.Marshal(members)
}
