package events

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// ChildRunEnded records, in a parent run's log, that the child run one of
// its subPlan steps started has ended. The engine appends it in the
// child's round that appends the child's RunCompleted, RunFailed or
// RunCancelled, keyed by (parent run, step, logical attempt), and only
// while the parent has not ended; the parent's engine ends the step from
// it (docs/plans.md, "Child runs"). Additive (state-store contract §6).
const ChildRunEnded Type = "ChildRunEnded"

// RunParent links a child run to the subPlan step of its parent that
// started it: RunApprovedData.Parent.
type RunParent struct {
	RunID  string `json:"runId"`
	StepID string `json:"stepId"`
	// LogicalAttemptID is the step's logical attempt that started the
	// child: a retry of the step starts a child of its own.
	LogicalAttemptID string `json:"logicalAttemptId"`
	// PlanVersion is the parent's plan version, with which the child's
	// ChildRunEnded in the parent's log is keyed.
	PlanVersion string `json:"planVersion"`
	// Depth is the child's depth: 1 for a child of a run a caller
	// started, one more at each level below.
	Depth int `json:"depth"`
}

// ChildRunEndedData is the payload of ChildRunEnded: which child ended,
// how, and with what.
type ChildRunEndedData struct {
	ChildRunID string `json:"childRunId"`
	// Status is RunStatusCompleted, RunStatusFailed or RunStatusCancelled.
	Status RunStatus `json:"status"`
	// Output is a completed child's output (its plan's output), absent
	// when it has none.
	Output json.RawMessage `json:"output,omitempty"`
	// Error is why a failed child failed, from its RunFailed.
	Error *StepError `json:"error,omitempty"`
	// Reason says, for people, why a failed or cancelled child ended.
	Reason string `json:"reason,omitempty"`
}

// ChildRunID returns the run id of the child run that logical attempt
// attempt of subPlan step stepID of run parentRunID starts at time at: a
// UUIDv7 with at's Unix milliseconds in its leading 48 bits, as every run
// id has (NewRunID), and the rest from the SHA-256 of (parent, step,
// attempt), so that the decision that starts a child names it before it
// is written, and one attempt of a step names one child.
func ChildRunID(parentRunID, stepID string, attempt int, at time.Time) string {
	sum := sha256.Sum256([]byte(parentRunID + "\x00" + stepID + "\x00" + strconv.Itoa(attempt)))
	var u uuid.UUID
	copy(u[:], sum[:16])
	ms := uint64(max(0, at.UnixMilli()))
	for i := range 6 {
		u[i] = byte(ms >> (8 * (5 - i)))
	}
	u[6] = (u[6] & 0x0f) | 0x70 // version 7
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 9562 variant
	return u.String()
}

// ChildRunRequestID is the run request id a child run is approved with:
// "child:<parent run>:<step>:<logical attempt>", derived as its run id
// is, so that it names the start that made it.
func ChildRunRequestID(parentRunID, stepID string, attempt int) string {
	return "child:" + parentRunID + ":" + stepID + ":" + strconv.Itoa(attempt)
}
