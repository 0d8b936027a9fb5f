package streams_test

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
)

func numbered(t *testing.T, runID string, seqs ...int64) ([]events.Event, [][]byte) {
	t.Helper()
	var evs []events.Event
	var enc [][]byte
	for _, seq := range seqs {
		ev, err := events.New(events.Spec{RunID: runID, Type: events.StepScheduled, StepID: "s", LogicalAttemptID: "1", PlanVersion: "1"})
		require.NoError(t, err)
		ev.RunSeq = seq
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		evs, enc = append(evs, ev), append(enc, b)
	}
	return evs, enc
}

func header(m map[string]string) nats.Header {
	h := nats.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// A batch decodes to its events; an event message to its one event.
func TestDecodeEventsReadsBothForms(t *testing.T) {
	t.Parallel()
	runID := events.NewRunID()
	evs, enc := numbered(t, runID, 4, 5, 6)
	got, err := streams.DecodeEvents(header(streams.BatchHeaders(evs)), streams.EncodeBatch(enc))
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, ev := range got {
		require.Equal(t, evs[i].EventID, ev.EventID)
		require.Equal(t, evs[i].RunSeq, ev.RunSeq)
	}
	require.Equal(t, "4", streams.BatchHeaders(evs)[streams.HeaderRunSeq])
	require.Equal(t, "6", streams.BatchHeaders(evs)[streams.HeaderRunSeqLast])

	one, err := streams.DecodeEvents(nats.Header{}, enc[0])
	require.NoError(t, err)
	require.Equal(t, []string{evs[0].EventID}, []string{one[0].EventID})
}

// A batch that breaks the contract is an error wrapping ErrBadBatch.
func TestDecodeEventsRefusesABadBatch(t *testing.T) {
	t.Parallel()
	runID := events.NewRunID()
	batch := header(map[string]string{streams.HeaderEventFormat: streams.EventFormatBatch})
	_, gap := numbered(t, runID, 1, 3)
	other, _ := numbered(t, events.NewRunID(), 2)
	_, mixed := numbered(t, runID, 1)
	otherEnc, err := json.Marshal(other[0])
	require.NoError(t, err)
	for name, c := range map[string]struct {
		h    nats.Header
		body []byte
	}{
		"a runSeq missing":  {batch, streams.EncodeBatch(gap)},
		"two runs":          {batch, streams.EncodeBatch(append(mixed, otherEnc))},
		"no events":         {batch, streams.EncodeBatch(nil)},
		"a later version":   {batch, []byte(`{"version":2,"events":[]}`)},
		"not JSON":          {batch, []byte(`{`)},
		"an unknown format": {header(map[string]string{streams.HeaderEventFormat: "batch/9"}), streams.EncodeBatch(gap[:1])},
	} {
		_, err := streams.DecodeEvents(c.h, c.body)
		require.ErrorIs(t, err, streams.ErrBadBatch, name)
	}
}

func TestParseEventForm(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]streams.EventForm{"": streams.EventFormBatch, "batch": streams.EventFormBatch, "event": streams.EventFormEvent} {
		got, err := streams.ParseEventForm(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := streams.ParseEventForm("events")
	require.ErrorContains(t, err, `"events"`)
}
