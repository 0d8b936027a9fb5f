package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
)

// cancelNoticeError is the cause of an activity context ended by a cancel
// notice.
type cancelNoticeError struct{ reason string }

func (c *cancelNoticeError) Error() string {
	if c.reason == "" {
		return "the run was cancelled"
	}
	return "the run was cancelled: " + c.reason
}

// subscribeCancels subscribes to the cancel notices of every run (core
// NATS, weft.cancel.*) and flushes, so a notice published after Start
// returns reaches this worker. ctx is the worker's run context, for logs.
func (w *Worker) subscribeCancels(ctx context.Context) (*nats.Subscription, error) {
	nc := w.js.Conn()
	sub, err := nc.Subscribe(streams.CancelSubjectPrefix+".*", func(m *nats.Msg) { w.onCancel(ctx, m) })
	if err != nil {
		return nil, fmt.Errorf("worker: subscribe to cancel notices: %w", err)
	}
	fctx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
	defer cancel()
	if err := nc.FlushWithContext(fctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("worker: subscribe to cancel notices: %w", err)
	}
	return sub, nil
}

// onCancel cancels the running activities a notice names, and remembers
// the notice so that the queued attempts it names are not started.
func (w *Worker) onCancel(ctx context.Context, m *nats.Msg) {
	c, err := decodeCancel(m.Data)
	if err != nil {
		w.logger.WarnContext(ctx, "worker: undecodable cancel notice ignored", "subject", m.Subject, "err", err)
		return
	}
	w.running.recent.add(c)
	if n := w.running.cancel(c); n > 0 {
		w.logger.InfoContext(ctx, "worker: cancel notice stopped running activities",
			"run_id", c.RunID, "activities", n, "reason", c.Reason)
	}
}

// decodeCancel decodes a cancel notice; one without a run id is an error.
func decodeCancel(data []byte) (task.Cancel, error) {
	var c task.Cancel
	if err := json.Unmarshal(data, &c); err != nil {
		return task.Cancel{}, err
	}
	if c.RunID == "" {
		return task.Cancel{}, errors.New("the notice has no runId")
	}
	return c, nil
}

// runningSet tracks the running attempts by run, for cancel notices, and
// the notices heard recently (recent), for the attempts not started yet.
type runningSet struct {
	mu     sync.Mutex
	byRun  map[string]map[*runningAttempt]struct{}
	recent recentCancels
	lookup cancelLookup
}

type runningAttempt struct {
	stepID, attempt string // attempt: the logical attempt
	cancel          context.CancelCauseFunc
}

// add tracks logical attempt attempt of step stepID of run runID,
// cancelled through cancel, and returns the function that stops tracking
// it.
func (s *runningSet) add(runID, stepID, attempt string, cancel context.CancelCauseFunc) (remove func()) {
	a := &runningAttempt{stepID: stepID, attempt: attempt, cancel: cancel}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byRun[runID] == nil {
		s.byRun[runID] = make(map[*runningAttempt]struct{})
	}
	s.byRun[runID][a] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.byRun[runID], a)
		if len(s.byRun[runID]) == 0 {
			delete(s.byRun, runID)
		}
	}
}

// cancel cancels the attempts c covers (task.Cancel.Covers: every attempt
// of the run when it names no step, none later than the attempt it names
// of a step, so that a timed-out attempt's notice never stops its retry)
// and returns how many.
func (s *runningSet) cancel(c task.Cancel) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for a := range s.byRun[c.RunID] {
		if c.Covers(a.stepID, a.attempt) {
			a.cancel(&cancelNoticeError{reason: c.Reason})
			n++
		}
	}
	return n
}
