package schedule_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/schedule"
)

// TestFireInputOverAStoredInput: a schedule stored before the input rule
// (written here as an older build could have) still fires. An object
// holding a key the fire sets gets the fire's value; an input that is not
// an object refuses the fire, recorded as a refused skip, and later fires
// try again. A null input is none.
func TestFireInputOverAStoredInput(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	for _, id := range []string{"reserved", "string", "null"} {
		b.create(t, request(id, "0 * * * *"))
	}
	for id, input := range map[string]string{"reserved": `{"scheduledFor": "then", "k": 1}`, "string": `"daily"`, "null": `null`} {
		_, err := b.db.Pool.Exec(t.Context(), `UPDATE schedules SET input = $2::jsonb WHERE schedule_id = $1`, id, input)
		require.NoError(t, err)
	}
	b.tickAt(t, at(9, 0))

	runs := b.runs(t, "reserved")
	require.Len(t, runs, 1)
	require.JSONEq(t, `{"k": 1, "scheduledFor": "2026-03-02T09:00:00Z", "schedule": {"id": "reserved"}}`, runs[0].input)
	runs = b.runs(t, "null")
	require.Len(t, runs, 1)
	require.JSONEq(t, `{"scheduledFor": "2026-03-02T09:00:00Z", "schedule": {"id": "null"}}`, runs[0].input)

	require.Empty(t, b.runs(t, "string"))
	s := b.get(t, "string")
	require.Equal(t, int64(1), s.Skipped.Refused)
	require.Len(t, s.RecentSkips, 1)
	require.Equal(t, api.SkipRefused, s.RecentSkips[0].Reason)
	require.Contains(t, s.RecentSkips[0].Message, "input must be a JSON object")
	require.Equal(t, at(10, 0), *s.NextFireAt, "the schedule goes on")
}

// TestNullInputIsNone: a create with input null is accepted, and its
// runs' input holds only the fire's keys.
func TestNullInputIsNone(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	req := request("n", "0 * * * *")
	req.Input = json.RawMessage(`null`)
	b.create(t, req)
	b.tickAt(t, at(9, 0))
	runs := b.runs(t, "n")
	require.Len(t, runs, 1)
	require.JSONEq(t, `{"scheduledFor": "2026-03-02T09:00:00Z", "schedule": {"id": "n"}}`, runs[0].input)
}
