package streams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/pkg/events"
)

// An event message on WEFT_EVENTS has one of two forms (docs/api.md,
// "Subscribing to a run's events"):
//
//   - the event form: the body is one events.Event, HeaderEventType its
//     type and HeaderRunSeq its runSeq. Inputs (class EventClassInput) are
//     always in this form, one event a message, so the engine starts a
//     round per message;
//   - the batch form (HeaderEventFormat = EventFormatBatch): the body is an
//     EventBatch, one or more consecutive events of one run and one class,
//     in runSeq order, HeaderRunSeq the first one's runSeq and
//     HeaderRunSeqLast the last one's, HeaderEventTypes their types. The
//     outcomes a round decided (class EventClassOutcome) are published so,
//     one message per round and run, unless the writers are told to use the
//     event form (EventFormEvent).
//
// A consumer decodes both with DecodeEvents.
const (
	// HeaderEventFormat names a message's form; it is set to
	// EventFormatBatch on a batch and absent on an event.
	HeaderEventFormat = "Weft-Event-Format"
	// HeaderRunSeqLast is the runSeq of a batch's last event, in decimal.
	HeaderRunSeqLast = "Weft-Run-Seq-Last"
	// HeaderEventTypes is a batch's event types, comma-separated, in order.
	HeaderEventTypes = "Weft-Event-Types"
	// EventFormatBatch is HeaderEventFormat's value on a batch: an
	// EventBatch of BatchVersion.
	EventFormatBatch = "batch/1"
	// BatchVersion is the version of EventBatch this build writes and
	// reads. A later version is a new EventFormatBatch value.
	BatchVersion = 1
)

// EventForm is the form the writers of events (gateway, engine) give the
// outcomes' messages.
type EventForm string

// The event forms a deployment may choose.
const (
	// EventFormBatch, the default, publishes a round's outcomes of a run as
	// one message (EventBatch).
	EventFormBatch EventForm = "batch"
	// EventFormEvent publishes every event as a message of its own, as
	// builds before the batch form did, for subscribers that read one
	// event a message.
	EventFormEvent EventForm = "event"
)

// ParseEventForm returns the form s names; "" is EventFormBatch.
func ParseEventForm(s string) (EventForm, error) {
	switch EventForm(s) {
	case "", EventFormBatch:
		return EventFormBatch, nil
	case EventFormEvent:
		return EventFormEvent, nil
	}
	return "", fmt.Errorf("streams: event form %q is neither %q nor %q", s, EventFormBatch, EventFormEvent)
}

// EventBatch is the body of a batch: consecutive events of one run.
type EventBatch struct {
	// Version is BatchVersion.
	Version int `json:"version"`
	// Events are one or more events of one run, in runSeq order, with no
	// runSeq between the first and the last missing.
	Events []events.Event `json:"events"`
}

// EncodeBatch returns the body of a batch (an EventBatch) of the events
// whose JSON encodings are encoded, in order, without decoding them.
func EncodeBatch(encoded [][]byte) []byte {
	n := 32
	for _, e := range encoded {
		n += len(e) + 1
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(`{"version":` + strconv.Itoa(BatchVersion) + `,"events":[`)
	for i, e := range encoded {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// BatchHeaders returns the headers of a batch of evs.
func BatchHeaders(evs []events.Event) map[string]string {
	types := make([]string, len(evs))
	for i, ev := range evs {
		types[i] = string(ev.EventType)
	}
	return map[string]string{
		HeaderEventFormat: EventFormatBatch,
		HeaderRunSeq:      strconv.FormatInt(evs[0].RunSeq, 10),
		HeaderRunSeqLast:  strconv.FormatInt(evs[len(evs)-1].RunSeq, 10),
		HeaderEventTypes:  strings.Join(types, ","),
	}
}

// ErrBadBatch is wrapped by DecodeEvents' errors for a batch that breaks
// EventBatch's contract.
var ErrBadBatch = errors.New("streams: malformed event batch")

// DecodeEvents returns the events of an event message, either form, with
// its headers h and body data. A batch must be of BatchVersion and hold
// consecutive events of one run.
func DecodeEvents(h nats.Header, data []byte) ([]events.Event, error) {
	switch f := h.Get(HeaderEventFormat); f {
	case "":
		var ev events.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("streams: decode event: %w", err)
		}
		return []events.Event{ev}, nil
	case EventFormatBatch:
		return decodeBatch(data)
	default:
		return nil, fmt.Errorf("%w: form %q is not %q", ErrBadBatch, f, EventFormatBatch)
	}
}

func decodeBatch(data []byte) ([]events.Event, error) {
	var b EventBatch
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBatch, err)
	}
	if b.Version != BatchVersion {
		return nil, fmt.Errorf("%w: version %d, not %d", ErrBadBatch, b.Version, BatchVersion)
	}
	if len(b.Events) == 0 {
		return nil, fmt.Errorf("%w: no events", ErrBadBatch)
	}
	first := b.Events[0]
	for i, ev := range b.Events[1:] {
		if ev.RunID != first.RunID || ev.RunSeq != first.RunSeq+int64(i)+1 {
			return nil, fmt.Errorf("%w: event %d is run %s runSeq %d, not run %s runSeq %d",
				ErrBadBatch, i+1, ev.RunID, ev.RunSeq, first.RunID, first.RunSeq+int64(i)+1)
		}
	}
	return b.Events, nil
}
