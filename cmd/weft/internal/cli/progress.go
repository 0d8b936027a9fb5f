package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
)

// barWidth is the number of cells of the progress bar.
const barWidth = 20

// progress shows a run's progress as it changes: a bar of steps done out
// of the total, the status, the steps in flight and the elapsed time. On a
// terminal it redraws one line in place, every second and at each change;
// elsewhere it prints one line per change of state.
type progress struct {
	w    io.Writer
	live bool
	// width caps a live line, which must not wrap to be redrawn in place.
	width int
	now   func() time.Time
	// last is the state of the last plain line; drawn reports a live line
	// on screen.
	last  string
	drawn bool
	// shown is the longest elapsed time shown: what is shown next never
	// goes below it (the run's recorded duration, on the server's clock,
	// may be shorter than what this clock counted while it ran).
	shown time.Duration
}

// defaultWidth is the width of a terminal that does not say
// ($COLUMNS unset).
const defaultWidth = 80

// newProgress returns a progress writing to w, live when w is a terminal
// of columns width (defaultWidth when columns is not a number).
func newProgress(w io.Writer, columns string) *progress {
	width, err := strconv.Atoi(columns)
	if err != nil || width < 20 {
		width = defaultWidth
	}
	return &progress{w: w, live: isTerminal(w), width: width, now: time.Now}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// show draws v: in place when live, else as a new line when its state
// differs from the last line's. Output errors are ignored: progress is
// best effort and the final answer reports what matters.
func (p *progress) show(v *api.RunView) {
	state := progressState(v)
	p.shown = max(p.shown, roughly(runElapsed(v, p.now())))
	elapsed := elapsedText(p.shown)
	if p.live {
		line := shorten(fmt.Sprintf("%s  %s", elapsed, state), p.width-1)
		_, _ = fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		p.drawn = true
		return
	}
	if state == p.last {
		return
	}
	p.last = state
	_, _ = fmt.Fprintf(p.w, "%7s  %s\n", elapsed, state)
}

// finish ends a live line, so what follows starts on a line of its own.
func (p *progress) finish() {
	if p.live && p.drawn {
		_, _ = fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// elapsedText is an elapsed time as a progress line shows it, in seconds:
// "0.4s" under ten seconds, then Duration's own form ("12s", "1m5s").
func elapsedText(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.String()
}

// roughly rounds an elapsed time for a progress line: to a tenth of a
// second under ten seconds, else to the second.
func roughly(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// progressState is the part of a progress line that changes with the run:
// "[#####---------------] 1/4 RUNNING  running: left, flaky". It counts
// the steps that succeeded as done, and names the failed and skipped ones
// apart: "1/3 FAILED (1 failed, 1 skipped)".
func progressState(v *api.RunView) string {
	counts := map[events.StepStatus]int{}
	for _, st := range v.TopSteps() {
		counts[st.Status]++
	}
	done, total := counts[events.StepStatusSuccess], v.StepsTotal()
	filled := 0
	if total > 0 {
		filled = done * barWidth / total
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat("-", barWidth-filled), done, total, v.Status)
	var others []string
	for _, o := range []struct {
		status events.StepStatus
		name   string
	}{{events.StepStatusFailed, "failed"}, {events.StepStatusSkipped, "skipped"}, {events.StepStatusCancelled, "cancelled"}} {
		if n := counts[o.status]; n > 0 {
			others = append(others, fmt.Sprintf("%d %s", n, o.name))
		}
	}
	if len(others) > 0 {
		b.WriteString(" (" + strings.Join(others, ", ") + ")")
	}
	if running, retrying := stepsInFlight(v); len(running)+len(retrying) > 0 {
		if len(running) > 0 {
			b.WriteString("  running: " + strings.Join(running, ", "))
		}
		if len(retrying) > 0 {
			b.WriteString("  retry pending: " + strings.Join(retrying, ", "))
		}
	}
	return b.String()
}

// stepsInFlight names the steps running now (a waitSignal step with the
// signal it waits for) and those waiting to be retried; none once the run
// has ended.
func stepsInFlight(v *api.RunView) (running, retrying []string) {
	if v.Status.Terminal() {
		return nil, nil
	}
	signals := make(map[string]string, len(v.Plan.Steps))
	for _, ps := range v.Plan.Steps {
		if ps.Kind == "waitSignal" {
			signals[ps.ID] = ps.Signal
		}
	}
	for _, s := range v.Steps {
		switch {
		case s.Status == events.StepStatusRunning && signals[s.StepID] != "":
			running = append(running, fmt.Sprintf("%s (waits for signal %s)", s.StepID, signals[s.StepID]))
		case s.Status == events.StepStatusRunning:
			running = append(running, s.StepID)
		case s.Status == events.StepStatusPending && s.Error != nil:
			retrying = append(retrying, s.StepID)
		}
	}
	return running, retrying
}

// pollResult is one answer of the poller.
type pollResult struct {
	v   *api.RunView
	err error
}

// follow shows the run's progress on p until it ends, and returns its last
// view. It starts from last when given (drawing it at once), else waits for
// the run's first event. It long-polls the read API (client.WaitRun); on a
// live progress it also redraws every second, to advance the elapsed time.
// When ctx ends it returns the last view seen (nil if none) and an error
// wrapping ctx.Err().
func follow(ctx context.Context, c *client.Client, runID string, last *api.RunView, p *progress) (*api.RunView, error) {
	var seq int64
	if last != nil {
		p.show(last)
		if last.Status.Terminal() {
			return last, nil
		}
		seq = last.LastEventSeq
	}
	pollCtx, cancel := context.WithCancel(ctx)
	results := make(chan pollResult)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { poll(pollCtx, c, runID, seq, results) })
	var tick <-chan time.Time
	if p.live {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case r := <-results:
			if r.err != nil {
				return last, r.err
			}
			last = r.v
			p.show(last)
			if last.Status.Terminal() {
				return last, nil
			}
		case <-tick:
			if last != nil {
				p.show(last)
			}
		case <-ctx.Done():
			return last, fmt.Errorf("wait for run %s: %w", runID, ctx.Err())
		}
	}
}

// poll sends each new view of the run to out, from the first past seq,
// until the run ends, a wait fails, or ctx ends.
func poll(ctx context.Context, c *client.Client, runID string, seq int64, out chan<- pollResult) {
	for {
		v, err := c.WaitRun(ctx, runID, seq)
		select {
		case out <- pollResult{v: v, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil || v.Status.Terminal() {
			return
		}
		seq = v.LastEventSeq
	}
}
