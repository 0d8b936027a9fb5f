package task

import (
	"slices"
	"strconv"
)

// Covers reports whether c cancels logical attempt logicalAttemptID of
// step stepID: c names no step, or names the step and either no attempt of
// it or one not earlier than logicalAttemptID.
func (c Cancel) Covers(stepID, logicalAttemptID string) bool {
	if len(c.StepIDs) == 0 {
		return true
	}
	if !slices.Contains(c.StepIDs, stepID) {
		return false
	}
	cancelled, ok := c.Attempts[stepID]
	if !ok {
		return true
	}
	want, err1 := strconv.ParseUint(logicalAttemptID, 10, 64)
	upTo, err2 := strconv.ParseUint(cancelled, 10, 64)
	if err1 != nil || err2 != nil {
		return cancelled == logicalAttemptID
	}
	return want <= upTo
}
