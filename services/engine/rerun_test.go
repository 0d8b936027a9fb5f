package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// A rerun copies the outcomes its RunApproved names from its source's
// log at its start; one whose source event is gone (retention removed
// the source between the rerun's acceptance and its start) fails at its
// start with REUSED_OUTPUT_GONE and runs nothing.
func TestRerunCopiesFromItsSourceOrFailsWhenItIsGone(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	p := parsePlan(t, `{"planId":"rr","planVersion":"1","steps":[
		{"id":"a","activity":"echo","input":{"x":1}},{"id":"b","activity":"echo","dependsOn":["a"]}]}`)
	src := s.start(t, p)
	srcEvs := s.waitTerminal(t, src)
	var aDone int64
	for _, e := range srcEvs {
		if e.EventType == events.StepCompleted && e.StepID == "a" {
			aDone = e.RunSeq
		}
	}
	rerun := func(seq int64) string {
		return s.approve(t, runstart.Request{Plan: validated(t, p),
			RerunOf: &events.RerunOf{RunID: src, FromStepID: "b", Reuse: []events.ReusedStep{{StepID: "a", RunSeq: seq}}}})
	}
	ok := rerun(aDone)
	evs := s.waitTerminal(t, ok)
	require.Equal(t, events.RunCompleted, terminal(evs))
	snap, err := events.Project(ok, evs)
	require.NoError(t, err)
	require.Equal(t, &events.EventRef{RunID: src, RunSeq: aDone}, stepOf(t, snap, "a").ReusedFrom)

	gone := rerun(aDone + 1000)
	evs = s.waitTerminal(t, gone)
	require.Equal(t, events.RunFailed, terminal(evs))
	snap, err = events.Project(gone, evs)
	require.NoError(t, err)
	require.Equal(t, decide.CodeReusedOutputGone, snap.Error.Code)
	require.NotContains(t, types(evs), events.StepScheduled, "nothing ran")
}
