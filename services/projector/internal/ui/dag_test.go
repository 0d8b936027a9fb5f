package ui_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chainPlan is a plan of n steps in a row, each after the one before.
func chainPlan(n int) string {
	steps := make([]string, n)
	for i := range steps {
		deps := ""
		if i > 0 {
			deps = fmt.Sprintf(`,"dependsOn":["s%d"]`, i)
		}
		steps[i] = fmt.Sprintf(`{"id":"s%d","activity":"echo"%s}`, i+1, deps)
	}
	return `{"schemaVersion":2,"planId":"chain","planVersion":"v1","steps":[` + strings.Join(steps, ",") + `]}`
}

// A six-step plan in a row, a little too wide for the window, starts
// zoomed out to fit its width: the whole graph shows with no scrolling
// (issue #19, item 11).
func TestDagSixStepsFitTheWidth(t *testing.T) {
	t.Parallel()
	v, evs := projectedRun(t, runID(6), time.Now(), chainPlan(6), nil, nil)
	b := openRun(t, v, evs)
	b.waitFor(`document.querySelectorAll('[data-testid="dag"] path.edge').length === 5`)
	b.waitFor(`+document.querySelector('[data-testid="dag"]').dataset.scale < 1`)
	require.Empty(t, eval[[]string](b, `(() => {
		const dag = document.querySelector('[data-testid="dag"]');
		const d = dag.getBoundingClientRect();
		const out = [];
		if (dag.scrollWidth > dag.clientWidth + 1) out.push('the box scrolls: ' + dag.scrollWidth + ' > ' + dag.clientWidth);
		for (const n of dag.querySelectorAll('[data-testid="step"]')) {
			const r = n.getBoundingClientRect();
			if (r.left < d.left - 1 || r.right > d.right + 1) out.push(n.dataset.stepId);
		}
		return out;
	})()`), "what does not show")
	require.GreaterOrEqual(t, eval[float64](b, `+document.querySelector('[data-testid="dag"]').dataset.scale`), 0.6, "still readable")
	b.console.RequireNoErrors(t)
}

// widePlan is a plan of 50 steps, both deep and wide: a chain of 25
// (deep-01 … deep-25, 25 columns) and 25 steps after deep-01 alone
// (wide-01 … wide-25, one column of 26 with deep-02).
func widePlan() string {
	steps := make([]string, 0, 50)
	for i := 1; i <= 25; i++ {
		deps := ""
		if i > 1 {
			deps = fmt.Sprintf(`,"dependsOn":["deep-%02d"]`, i-1)
		}
		steps = append(steps, fmt.Sprintf(`{"id":"deep-%02d","activity":"echo"%s}`, i, deps))
	}
	for i := 1; i <= 25; i++ {
		steps = append(steps, fmt.Sprintf(`{"id":"wide-%02d","activity":"echo","dependsOn":["deep-01"]}`, i))
	}
	return `{"schemaVersion":2,"planId":"wide","planVersion":"v1","steps":[` + strings.Join(steps, ",") + `]}`
}

// The graph of a wide and deep plan fits (issue #19, item 11): the page
// itself never runs off the right edge; the graph scrolls both ways in a
// box no taller than the viewport, where every node can be brought into
// view and dragging the background pans; Fit zooms it out until the whole
// graph shows in the box, and 100% brings it back.
func TestDagFitsWideAndDeepPlans(t *testing.T) {
	t.Parallel()
	v, evs := projectedRun(t, runID(50), time.Now(), widePlan(), nil, nil)
	b := openRun(t, v, evs)
	b.waitFor(`document.querySelectorAll('[data-testid="step"]').length === 50`)
	b.waitFor(`document.querySelectorAll('[data-testid="dag"] path.edge').length === 49`)

	require.True(t, eval[bool](b, `document.documentElement.scrollWidth <= document.documentElement.clientWidth`),
		"the page does not run off the right edge")
	require.True(t, eval[bool](b, `(d => d.getBoundingClientRect().height <= innerHeight
		&& d.scrollWidth > d.clientWidth && d.scrollHeight > d.clientHeight)(document.querySelector('[data-testid="dag"]'))`),
		"the graph scrolls both ways in a box no taller than the viewport")
	require.Equal(t, "100%", eval[string](b, `document.querySelector('[data-testid="dag-zoom"]').textContent`))

	// Every node, scrolled to, is inside the graph's box and the viewport.
	require.Empty(t, eval[[]string](b, `(() => {
		const dag = document.querySelector('[data-testid="dag"]');
		const out = [];
		for (const n of dag.querySelectorAll('[data-testid="step"]')) {
			n.scrollIntoView({block: 'nearest', inline: 'nearest'});
			if (!inside(n.getBoundingClientRect(), dag.getBoundingClientRect())) out.push(n.dataset.stepId);
		}
		return out;
		function inside(r, d) {
			return r.left >= d.left - 1 && r.right <= d.right + 1 && r.top >= d.top - 1 && r.bottom <= d.bottom + 1
				&& r.left >= -1 && r.right <= innerWidth + 1 && r.top >= -1 && r.bottom <= innerHeight + 1;
		}
	})()`), "nodes that cannot be brought into view")
	requireEdgesInside(b)

	// Dragging the background pans the box.
	b.do(chromedp.Evaluate[chromedp.Void](`(d => { d.scrollIntoView({block: 'start'}); d.scrollLeft = 0; d.scrollTop = 0; })(document.querySelector('[data-testid="dag"]'))`))
	type point struct{ X, Y float64 }
	// The gap between the first two columns, half way down the box.
	at := eval[point](b, `(d => ({X: d.querySelector('.dag-col').getBoundingClientRect().right + 20,
		Y: d.getBoundingClientRect().top + d.clientHeight / 2}))(document.querySelector('[data-testid="dag"]'))`)
	b.do(
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, at.X, at.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at.X-150, at.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at.X-300, at.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, at.X-300, at.Y, chromedp.ButtonLeft))
	b.waitFor(`Math.abs(document.querySelector('[data-testid="dag"]').scrollLeft - 300) < 2`) // dragged 300 px left

	// Fit shows the whole graph in the box, with no scrolling.
	b.do(chromedp.Click(sel("dag-fit")))
	b.waitFor(`+document.querySelector('[data-testid="dag"]').dataset.scale < 1`)
	require.Empty(t, eval[[]string](b, `(() => {
		const dag = document.querySelector('[data-testid="dag"]');
		const d = dag.getBoundingClientRect();
		const out = [];
		if (dag.scrollWidth > dag.clientWidth + 1 || dag.scrollHeight > dag.clientHeight + 1) out.push("the box still scrolls " + [dag.scrollWidth, dag.clientWidth, dag.scrollHeight, dag.clientHeight, dag.querySelector(".dag-sizer").style.cssText, dag.querySelector(".dag-canvas").offsetWidth, dag.querySelector(".dag-canvas").offsetHeight, getComputedStyle(dag).padding].join(" "));
		for (const n of dag.querySelectorAll('[data-testid="step"]')) {
			const r = n.getBoundingClientRect();
			if (r.left < d.left - 1 || r.right > d.right + 1 || r.top < d.top - 1 || r.bottom > d.bottom + 1) out.push(n.dataset.stepId);
		}
		return out;
	})()`), "after Fit, what does not show")
	requireEdgesInside(b)
	zoom := eval[string](b, `document.querySelector('[data-testid="dag-zoom"]').textContent`)
	require.NotEqual(t, "100%", zoom)

	b.do(chromedp.Click(sel("dag-zoom-reset")))
	b.waitFor(`document.querySelector('[data-testid="dag-zoom"]').textContent === '100%'`)
	b.do(chromedp.Click(sel("dag-zoom-out")))
	b.waitFor(`document.querySelector('[data-testid="dag-zoom"]').textContent === '80%'`)
	b.do(chromedp.Click(sel("dag-zoom-in")))
	b.waitFor(`document.querySelector('[data-testid="dag-zoom"]').textContent === '100%'`)
	b.console.RequireNoErrors(t)
}

// requireEdgesInside asserts that the edges layer covers the whole graph
// and that every edge lies in it.
func requireEdgesInside(b *bundle) {
	b.t.Helper()
	require.Empty(b.t, eval[[]string](b, `(() => {
		const canvas = document.querySelector('[data-testid="dag"] .dag-canvas');
		const svg = canvas.querySelector('svg.dag-edges');
		const w = +svg.getAttribute('width'), h = +svg.getAttribute('height');
		const out = [];
		if (w < canvas.offsetWidth || h < canvas.offsetHeight) out.push('svg ' + w + 'x' + h);
		const paths = svg.querySelectorAll('path.edge');
		if (paths.length !== 49) out.push(paths.length + ' edges');
		for (const p of paths) {
			const bb = p.getBBox();
			if (bb.x < -1 || bb.y < -1 || bb.x + bb.width > w + 1 || bb.y + bb.height > h + 1) out.push(p.getAttribute('d'));
		}
		return out;
	})()`), "edges outside the edges layer")
}
