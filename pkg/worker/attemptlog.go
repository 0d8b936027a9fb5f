package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/weftrun/weft/pkg/task"
)

// How a delivery's outcome was reached, the settled_by of its end log line
// (docs/worker-protocol.md, "Logs").
const (
	// settledByActivity: the activity ran (to its end, or until a hard
	// stop). Count these per attempt to count executions.
	settledByActivity = "activity"
	// settledByMemory: the unacked outcome of an earlier delivery in this
	// process was reported again; the activity did not run.
	settledByMemory = "memory"
	// settledByWorker: the worker failed the attempt without running the
	// activity (no such activity, bad input or key, a reconciliation that
	// could not decide).
	settledByWorker = "worker"
)

// execution is how one delivery of a task ended.
type execution struct {
	result    task.Result
	finished  bool   // a final result exists; false: abandoned on a hard stop, or deferred
	deferred  bool   // not run, no final result: the task is given back after RedeliveryDelay
	by        string // settledBy…; empty when abandoned before anything ran
	published bool   // the final result's PubAck arrived
	acked     bool   // the server confirmed the task's ack
}

// reconciledBy is the settledBy of a result reconciliation settled: the
// result's task.ReconciledByRecord or task.ReconciledByVerify (the
// activity did not run), else settledByWorker.
func reconciledBy(r task.Result) string {
	if r.Reconcile != nil && r.Reconcile.ReconciledBy != "" {
		return r.Reconcile.ReconciledBy
	}
	return settledByWorker
}

// logEnded logs the end of one delivery at info level, on log, which
// carries the attempt's ids: its outcome, how it was reached, whether it
// was published and acked, and how long it took.
func logEnded(ctx context.Context, log *slog.Logger, x execution, took time.Duration) {
	attrs := []any{"outcome", outcome(x), "settled_by", x.by, "published", x.published, "acked", x.acked,
		"duration_ms", float64(took.Microseconds()) / 1000}
	if e := x.result.Error; x.finished && e != nil {
		attrs = append(attrs, "code", e.Code)
	}
	log.InfoContext(ctx, "worker: attempt ended", attrs...)
}

// outcome is "completed" or "failed" for a finished execution, else
// "abandoned".
func outcome(x execution) string {
	switch {
	case !x.finished:
		return "abandoned"
	case x.result.Kind == task.Completed:
		return "completed"
	default:
		return "failed"
	}
}
