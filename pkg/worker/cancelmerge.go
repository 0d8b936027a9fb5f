package worker

import (
	"maps"
	"slices"
	"strconv"

	"github.com/weftrun/weft/pkg/task"
)

// mergeCancels returns the notice of one run that covers (task.Cancel.Covers)
// every attempt earlier or later covers, with later's reason: every step
// when either names none; else the steps of both, each up to the higher of
// the attempts the two name for it, or every attempt of it when one names
// none.
func mergeCancels(earlier, later task.Cancel) task.Cancel {
	out := later
	if len(earlier.StepIDs) == 0 || len(later.StepIDs) == 0 {
		out.StepIDs, out.Attempts = nil, nil
		return out
	}
	out.StepIDs, out.Attempts = slices.Clone(later.StepIDs), maps.Clone(later.Attempts)
	if out.Attempts == nil {
		out.Attempts = map[string]string{}
	}
	for _, step := range earlier.StepIDs {
		was, wasOK := earlier.Attempts[step]
		if !slices.Contains(out.StepIDs, step) {
			out.StepIDs = append(out.StepIDs, step)
			if wasOK {
				out.Attempts[step] = was
			}
			continue
		}
		now, nowOK := out.Attempts[step]
		switch {
		case !nowOK: // every attempt already
		case !wasOK:
			delete(out.Attempts, step)
		case attemptNumber(was) > attemptNumber(now):
			out.Attempts[step] = was
		}
	}
	return out
}

// attemptNumber reads a logical attempt id; 0 when it is not a number.
func attemptNumber(id string) uint64 {
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}
