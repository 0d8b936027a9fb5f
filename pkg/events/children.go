package events

import (
	"strconv"
	"strings"
)

// ChildStepID returns the step id of element index of forEach step parent:
// "parent[index]". Each element runs as a child step with this id in every
// step event (StepScheduled, StepStarted, StepCompleted, ...), with its own
// logical attempts; the plan validator refuses a step id that has this
// form for a forEach step of the same plan, so a child id never names a
// plan step.
func ChildStepID(parent string, index int) string {
	return parent + "[" + strconv.Itoa(index) + "]"
}

// ParseChildStepID splits a child step id made by ChildStepID into its
// parent and index; ok is false when id does not have that form (a
// decimal index without sign or leading zeros, inside a final pair of
// brackets, after a non-empty parent).
func ParseChildStepID(id string) (parent string, index int, ok bool) {
	if !strings.HasSuffix(id, "]") {
		return "", 0, false
	}
	open := strings.LastIndexByte(id, '[')
	if open < 1 {
		return "", 0, false
	}
	digits := id[open+1 : len(id)-1]
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return "", 0, false
	}
	return id[:open], n, true
}
