package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// bulkPollInterval is how often a bulk job being followed is read again.
const bulkPollInterval = 500 * time.Millisecond

// bulkProgress shows a bulk job's progress as it changes: a bar of the
// runs counted out of those matched, the status, and the done, skipped
// (with reasons) and failed counts. On a terminal it redraws one line in
// place; elsewhere it prints one line per change.
type bulkProgress struct {
	w     io.Writer
	live  bool
	width int // caps a live line, which must not wrap to be redrawn in place
	last  string
	drawn bool
}

// newBulkProgress returns a bulkProgress writing to w, live when w is a
// terminal of columns width (defaultWidth when columns is not a number).
func newBulkProgress(w io.Writer, columns string) *bulkProgress {
	p := newProgress(w, columns)
	return &bulkProgress{w: w, live: p.live, width: p.width}
}

// show draws job. Output errors are ignored: progress is best effort and
// the final answer reports what matters.
func (p *bulkProgress) show(job *api.BulkJob) {
	state := bulkState(job)
	if p.live {
		_, _ = fmt.Fprintf(p.w, "\r%s\x1b[K", shorten(state, p.width-1))
		p.drawn = true
		return
	}
	if state != p.last {
		p.last = state
		_, _ = fmt.Fprintln(p.w, state)
	}
}

// finish ends a live line, so what follows starts on a line of its own.
func (p *bulkProgress) finish() {
	if p.live && p.drawn {
		_, _ = fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// bulkState is a progress line: "[#####---------------] 25/100 RUNNING
// done 20, skipped 5 (run has ended: 5), failed 0".
func bulkState(job *api.BulkJob) string {
	counted := job.Done + job.Skipped + job.Failed
	filled := barWidth
	if job.Matched > 0 {
		filled = int(min(counted, job.Matched) * barWidth / job.Matched)
	}
	return fmt.Sprintf("[%s%s] %d/%d %s  done %d, skipped %s, failed %d", strings.Repeat("#", filled),
		strings.Repeat("-", barWidth-filled), counted, job.Matched, job.Status, job.Done, skippedText(job), job.Failed)
}

// skippedText is the skipped count with its reasons, sorted:
// "3 (run has ended: 2, run is not PAUSED: 1)"; "0" for none.
func skippedText(job *api.BulkJob) string {
	if len(job.SkippedReasons) == 0 {
		return fmt.Sprint(job.Skipped)
	}
	reasons := make([]string, 0, len(job.SkippedReasons))
	for _, r := range slices.Sorted(maps.Keys(job.SkippedReasons)) {
		reasons = append(reasons, fmt.Sprintf("%s: %d", r, job.SkippedReasons[r]))
	}
	return fmt.Sprintf("%d (%s)", job.Skipped, strings.Join(reasons, ", "))
}

// followBulk reads job until it is no longer RUNNING, showing its
// progress on stderr, then prints it on stdout in format and returns the
// error its outcome exits with (bulkOutcome).
func followBulk(ctx context.Context, env *Env, c *cliClient, job *api.BulkJob, format outputFormat) error {
	p := newBulkProgress(env.Stderr, env.Getenv("COLUMNS"))
	job, err := pollBulk(ctx, c, job, p)
	p.finish()
	switch {
	case ctx.Err() != nil:
		return &codeError{code: ExitInterrupt, err: fmt.Errorf("interrupted while following bulk job %s; the job goes on (weft bulk get %s, weft bulk cancel %s)",
			job.BulkID, job.BulkID, job.BulkID)}
	case err != nil:
		return c.explain(fmt.Errorf("follow bulk job %s: %w", job.BulkID, err))
	}
	if err := printAs(env.Stdout, format, job, printBulkJob); err != nil {
		return err
	}
	return bulkOutcome(job)
}

// pollBulk shows job on p and reads it every bulkPollInterval until it is
// no longer RUNNING; it returns the last job read.
func pollBulk(ctx context.Context, c *cliClient, job *api.BulkJob, p *bulkProgress) (*api.BulkJob, error) {
	t := time.NewTicker(bulkPollInterval)
	defer t.Stop()
	for {
		p.show(job)
		if job.Status != api.BulkRunning {
			return job, nil
		}
		select {
		case <-ctx.Done():
			return job, ctx.Err()
		case <-t.C:
		}
		next, err := c.GetBulk(ctx, job.BulkID)
		if err != nil {
			return job, err
		}
		job = next
	}
}

// bulkOutcome is the error a followed job exits with: nil when it is
// DONE and no run failed, ExitFailed when some did, ExitCancelled for a
// cancelled job.
func bulkOutcome(job *api.BulkJob) error {
	switch {
	case job.Status == api.BulkCancelled:
		return &codeError{code: ExitCancelled, err: fmt.Errorf("bulk job %s was cancelled after %d of %d runs",
			job.BulkID, job.Done+job.Skipped+job.Failed, job.Matched)}
	case job.Failed > 0:
		return &codeError{code: ExitFailed, err: fmt.Errorf("bulk job %s: %s failed on %d of %d runs (the gateway's log names them)",
			job.BulkID, job.Action, job.Failed, job.Matched)}
	}
	return nil
}
