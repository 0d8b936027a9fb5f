package decide

import (
	"encoding/json"

	"github.com/weftrun/weft/pkg/events"
)

// Fan is the fan-out of a forEach step's current attempt, derived from
// its StepScheduled (which records the evaluated list as the step's input)
// and from the states of its children, the steps
// events.ChildStepID(step, i) in State.Steps. A State holds one for each
// forEach step whose current attempt is scheduled; folding and restoring
// a checkpoint derive it the same way.
type Fan struct {
	// Items are the elements of the list, each as compact JSON text. The
	// slice is shared between states and never modified.
	Items []string
	// Running, Waiting, Done and Failed count the children in flight,
	// waiting for a policy retry's timer, SUCCESS, and FAILED.
	Running, Waiting, Done, Failed int
	// Next is the first child that is idle: never scheduled in its
	// current retry series (its first attempt, or one RETRY_STEP brought
	// back). Every child before it has been scheduled.
	Next int
}

// The categories of a child, for Fan's counts.
const (
	childIdle = iota
	childRunning
	childWaiting
	childDone
	childFailed
)

// childCategory returns which of Fan's counts child st is in.
func childCategory(st StepState) int {
	switch {
	case st.Status == events.StepStatusSuccess:
		return childDone
	case st.Status.Terminal():
		return childFailed
	case st.InFlight():
		return childRunning
	case st.Attempt == st.SeriesStart:
		return childIdle
	default:
		return childWaiting
	}
}

// count adds n to the count of category c.
func (f *Fan) count(c, n int) {
	switch c {
	case childRunning:
		f.Running += n
	case childWaiting:
		f.Waiting += n
	case childDone:
		f.Done += n
	case childFailed:
		f.Failed += n
	default:
	}
}

// Active is the number of children started and not ended.
func (f Fan) Active() int { return f.Running + f.Waiting }

// setFan sets the Fan of forEach step parent.
func (s *State) setFan(parent string, f Fan) {
	if s.Fans == nil {
		s.Fans = map[string]Fan{}
	}
	s.Fans[parent] = f
}

// child returns the state of element i of forEach step parent: its
// initial state until its first event.
func (s *State) child(parent string, i int) StepState {
	if st, ok := s.Elements[parent].get(i); ok {
		return st
	}
	return initialStep()
}

// newFan derives the Fan of forEach step parent from the list its
// StepScheduled recorded, as compact JSON text, and its children's
// states.
func (s *State) newFan(parent, list string) Fan {
	var raw []json.RawMessage
	_ = json.Unmarshal([]byte(list), &raw) // the decider recorded a list; anything else has no elements
	f := Fan{Items: make([]string, len(raw)), Next: len(raw)}
	for i, r := range raw {
		f.Items[i] = compactJSON(r)
		c := childCategory(s.child(parent, i))
		f.count(c, 1)
		if c == childIdle && f.Next == len(raw) {
			f.Next = i
		}
	}
	return f
}

// moved updates f for element i of step parent, whose state went from
// before to after: the counts, and Next, the first idle element.
func (s *State) moved(f Fan, parent string, i int, before, after StepState) Fan {
	b, a := childCategory(before), childCategory(after)
	if b == a {
		return f
	}
	f.count(b, -1)
	f.count(a, 1)
	switch {
	case a == childIdle && i < f.Next:
		f.Next = i
	case b == childIdle && i == f.Next:
		for f.Next < len(f.Items) && childCategory(s.child(parent, f.Next)) != childIdle {
			f.Next++
		}
	}
	return f
}
