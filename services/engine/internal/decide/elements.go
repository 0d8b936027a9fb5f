package decide

import (
	"slices"

	"github.com/weftrun/weft/pkg/events"
)

// elementChunk is how many element states share one block of Elements.
const elementChunk = 32

// Elements holds the states of the elements of one forEach step, by
// index: those that have had an event. It is a value whose blocks are
// shared between states and copied on write, so that a round over a step
// of 10,000 elements copies a few kilobytes, not every element's state.
type Elements struct {
	blocks []*[elementChunk]StepState
}

// get returns the state of element i, and false when it has had no event.
func (e Elements) get(i int) (StepState, bool) {
	b := i / elementChunk
	if i < 0 || b >= len(e.blocks) || e.blocks[b] == nil {
		return StepState{}, false
	}
	st := e.blocks[b][i%elementChunk]
	return st, st != StepState{}
}

// set returns e with element i's state st; e itself is unchanged.
func (e Elements) set(i int, st StepState) Elements {
	b := i / elementChunk
	blocks := slices.Clone(e.blocks)
	if b >= len(blocks) {
		blocks = append(blocks, make([]*[elementChunk]StepState, b+1-len(blocks))...)
	}
	var block [elementChunk]StepState
	if blocks[b] != nil {
		block = *blocks[b]
	}
	block[i%elementChunk] = st
	blocks[b] = &block
	return Elements{blocks: blocks}
}

// each calls f with the index and state of every element that has had an
// event, in index order.
func (e Elements) each(f func(i int, st StepState)) {
	for b, block := range e.blocks {
		if block == nil {
			continue
		}
		for j, st := range block {
			if st != (StepState{}) {
				f(b*elementChunk+j, st)
			}
		}
	}
}

// stepState returns the state of step id: a step of the plan, or an
// element of a forEach step (events.ChildStepID) that has had an event.
func (s *State) stepState(id string) (StepState, bool) {
	if st, ok := s.Steps[id]; ok {
		return st, true
	}
	if len(s.Elements) == 0 {
		return StepState{}, false
	}
	parent, i, ok := events.ParseChildStepID(id)
	if !ok {
		return StepState{}, false
	}
	return s.Elements[parent].get(i)
}

// setElement records the state of element i of forEach step parent.
func (s *State) setElement(parent string, i int, st StepState) {
	if s.Elements == nil {
		s.Elements = map[string]Elements{}
	}
	s.Elements[parent] = s.Elements[parent].set(i, st)
}
