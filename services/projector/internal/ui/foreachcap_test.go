package ui_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
)

// childMax is the most children the step panel lists: the read API's
// largest page of children (projector.DefaultMaxChildrenPage), which the
// fake enforces as the projector does.
const childMax = 1000

// TestForEachChildrenCapped: a forEach step with more scheduled children
// than the read API's largest page lists them 50 more at a time up to
// that page, childMax, and then says so instead of offering more: it never
// asks for a page the read API refuses.
func TestForEachChildrenCapped(t *testing.T) {
	t.Parallel()
	const n = childMax + 10
	script := []scripted{{typ: events.RunStarted},
		{events.StepScheduled, "fan", "1", "", events.StepScheduledData{Activity: "noop", Queue: "default",
			ForEach: &events.ForEachData{Count: n, MaxParallel: n}}}}
	for i := range n {
		script = append(script, scripted{events.StepScheduled, events.ChildStepID("fan", i), "1", "",
			events.StepScheduledData{Activity: "noop", Queue: "default"}})
	}
	v, evs := projectedRun(t, "0193b000-7c41-7a8e-9d1f-3b2c5e8f00ca", time.Now(),
		`{"planId":"fan","planVersion":"v1","steps":[{"id":"fan","activity":"noop","forEach":"lists.range(1010)"}]}`, nil, script)
	b := openRun(t, v, evs)
	b.openStep("fan")
	for shown := 50; shown < childMax; shown += 50 {
		b.waitFor(`document.querySelectorAll('[data-testid="foreach-child"]').length === ` + strconv.Itoa(shown))
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="foreach-more"]:not([disabled])`)))
	}
	b.waitFor(`document.querySelectorAll('[data-testid="foreach-child"]').length === ` + strconv.Itoa(childMax))
	assert.Empty(t, panelText(b, "foreach-more"), "no page past the largest is offered")
	assert.Equal(t, "The first 1000 are listed.", panelText(b, "foreach-capped"))
	require.Empty(t, panelText(b, "step-panel-error"))
	b.console.RequireNoErrors(t)
}
