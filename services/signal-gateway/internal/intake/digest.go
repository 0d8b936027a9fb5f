package intake

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
)

// Repeat says what makes a start a repeat of an earlier one, and how a
// repeat whose request differs from the first start's (requestDigest) is
// answered.
type Repeat int

const (
	// RepeatMustMatch refuses a repeat whose plan or input differs with
	// CodeIdempotencyConflict: the runRequestId of a plain start, the
	// eventId of a trigger event, is the caller's key for one request.
	RepeatMustMatch Repeat = iota
	// RepeatOfTuple answers every repeat of the tuple with the first
	// start's run, whatever it holds: a schedule's fire, which its
	// schedule and fire time identify, is the same fire after its
	// schedule's plan or input has changed (a schedule restored from a
	// backup, docs/schedules.md).
	RepeatOfTuple
	// RepeatOfRequestID makes a start a repeat by its run request id
	// (with its tenant, project, environment and planId), whatever plan
	// version it resolved to: its tuple holds api.PlanVersionLatest in
	// place of the version, and its digest leaves the plan out. A repeat
	// that resolved another version is answered with the first start's
	// run; one with another input is refused with CodeIdempotencyConflict,
	// as under RepeatMustMatch. It is the start of an event to a trigger
	// that follows "latest": an event redelivered after a new version was
	// pushed is the same event. No registered version is named "latest",
	// so no start under another Repeat shares such a tuple.
	RepeatOfRequestID
)

// requestDigest is the digest of start's request, stored with its run
// request: the SHA-256 of the run request's key (the identity tuple,
// newRunRequest), the plan (unless withPlan is false) and the input, the
// two in canonical JSON (canonicalJSON), so a repeat that differs only
// in key order, white space or string escapes has the same digest. An
// absent input is null. A rerun's digest covers its source run and step
// too (events.RerunOf), so a repeat of its runRequestId that reruns
// another run, or from another step, conflicts; so does a repeat with
// other labels. A start without labels digests as it did before labels
// existed, so the stored digests of earlier starts still match.
func requestDigest(start runstart.Request, key []byte, withPlan bool) []byte {
	h := sha256.New()
	h.Write(key)
	if withPlan {
		h.Write(canonicalJSON(start.Plan.JSON()))
	}
	h.Write([]byte{'\n'}) // compact JSON holds no raw newline
	h.Write(canonicalJSON(start.Input))
	if start.RerunOf != nil { // a rerun of another run, or from another step, is another request
		h.Write([]byte{'\n'})
		h.Write([]byte(start.RerunOf.RunID + "\n" + start.RerunOf.FromStepID))
	}
	if len(start.Labels) > 0 { // a start with other labels is another request
		h.Write([]byte("\nlabels\n"))
		h.Write(canonicalLabels(start.Labels))
	}
	return h.Sum(nil)
}

// canonicalLabels is labels as a JSON object, its keys sorted
// (encoding/json sorts a map's keys).
func canonicalLabels(labels map[string]string) []byte {
	out, _ := json.Marshal(labels) // a map of strings always encodes
	return out
}

// CanonicalJSON is doc in canonical JSON (canonicalJSON), the form the
// digests of requests and of registered plans are taken of.
func CanonicalJSON(doc json.RawMessage) []byte { return canonicalJSON(doc) }

// canonicalJSON is doc with its object keys sorted and no white space,
// numbers written as they were sent: doc decoded and encoded again by
// encoding/json. An empty doc is null; one that does not decode (the
// transports let none through) is kept as it is.
func canonicalJSON(doc json.RawMessage) []byte {
	if len(bytes.TrimSpace(doc)) == 0 {
		return []byte("null")
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return doc
	}
	out, err := json.Marshal(v)
	if err != nil {
		return doc
	}
	return out
}

// idempotencyConflict is the refusal of start, a repeat of the run
// request of runID's start with another request.
func idempotencyConflict(start runstart.Request, runID string) *Error {
	return &Error{Code: api.CodeIdempotencyConflict,
		Message: fmt.Sprintf("runRequestId %q was used by an earlier start with another plan or input (run %s): "+
			"send that request again to get its run, or this one under a runRequestId of its own", start.RunRequestID, runID),
		Details: map[string]any{"runId": runID, "runRequestId": start.RunRequestID}}
}
