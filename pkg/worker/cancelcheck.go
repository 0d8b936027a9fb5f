package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
)

// maxRecentCancels bounds the cancel notices a worker remembers (one per
// run, the oldest forgotten first). It is a cache in front of the lookup
// in WEFT_CANCELS, not the record: a forgotten notice costs one direct
// get when a task of its run arrives, never a wrong answer.
const maxRecentCancels = 4096

// recentCancels remembers the last maxRecentCancels notices heard, by run.
// The zero value is empty and ready; it is safe for concurrent use.
type recentCancels struct {
	mu    sync.Mutex
	byRun map[string]task.Cancel
	order []string // runs in the order first heard, oldest first
}

// add remembers c, the run's latest notice, merged with the run's notice
// it remembers (mergeCancels): a run may send several (a timeout's of one
// attempt, then another's), and a later one does not lift an earlier one.
func (r *recentCancels) add(c task.Cancel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byRun == nil {
		r.byRun = make(map[string]task.Cancel)
	}
	if _, ok := r.byRun[c.RunID]; !ok {
		if len(r.order) == maxRecentCancels {
			delete(r.byRun, r.order[0])
			r.order = r.order[1:]
		}
		r.order = append(r.order, c.RunID)
	} else {
		c = mergeCancels(r.byRun[c.RunID], c)
	}
	r.byRun[c.RunID] = c
}

// get returns the run's remembered notice.
func (r *recentCancels) get(runID string) (task.Cancel, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.byRun[runID]
	return c, ok
}

// cancelLookupPause is how long a worker makes no lookup in WEFT_CANCELS
// after one failed. A lookup that fails has cost up to PublishTimeout (a
// server without the stream, a user without the permission to read it,
// an unreachable server); the pause keeps that cost off every task of a
// busy queue, at the price of starting, meanwhile, the attempts of runs
// cancelled while the worker was not subscribed, as it would without the
// stream.
const cancelLookupPause = 30 * time.Second

// errLookupPaused is the error of a lookup skipped in a cancelLookupPause.
var errLookupPaused = errors.New("lookups paused after a failure")

// cancelLookup reads a run's notice from WEFT_CANCELS. It holds the
// stream's handle once one lookup got it, and pauses after a failure. The
// zero value is ready; now, when set, is its clock.
type cancelLookup struct {
	mu       sync.Mutex
	stream   jetstream.Stream
	failedAt time.Time
	now      func() time.Time
}

// paused reports whether a lookup now falls in the pause after the last
// failure.
func (l *cancelLookup) paused() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.failedAt.IsZero() && l.clock().Sub(l.failedAt) < cancelLookupPause
}

// failed starts a pause.
func (l *cancelLookup) failed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failedAt = l.clock()
}

func (l *cancelLookup) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// handle returns the stream's handle, getting it on first use (one
// STREAM.INFO request; it fails while the stream does not exist).
func (l *cancelLookup) handle(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stream != nil {
		return l.stream, nil
	}
	s, err := js.Stream(ctx, streams.CancelsStream)
	if err != nil {
		return nil, err
	}
	l.stream = s
	return s, nil
}

// last returns the run's notice in WEFT_CANCELS: the last message on
// weft.cancel.<runID>, by a direct get. ok is false when the run has none.
// A failure to reach the stream pauses lookups for cancelLookupPause; one
// made in the pause fails with errLookupPaused at once.
func (l *cancelLookup) last(ctx context.Context, js jetstream.JetStream, runID string) (c task.Cancel, ok bool, err error) {
	subject, err := streams.CancelSubject(runID)
	if err != nil {
		return task.Cancel{}, false, err
	}
	if l.paused() {
		return task.Cancel{}, false, errLookupPaused
	}
	s, err := l.handle(ctx, js)
	if err != nil {
		l.failed()
		return task.Cancel{}, false, err
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return task.Cancel{}, false, nil
	}
	if err != nil {
		l.failed()
		return task.Cancel{}, false, err
	}
	if c, err = decodeCancel(m.Data); err != nil {
		return task.Cancel{}, false, fmt.Errorf("%w: undecodable notice at stream sequence %d: %w", errBadNotice, m.Sequence, err)
	}
	if c.RunID != runID {
		return task.Cancel{}, false, fmt.Errorf("%w: the notice at stream sequence %d is for run %s", errBadNotice, m.Sequence, c.RunID)
	}
	return c, true, nil
}

// errBadNotice marks a lookup that found a message on the run's cancel
// subject that is not the run's task.Cancel. The engine publishes only
// notices that decode and name their run, so such a message was put there
// by someone else (a reply aimed at weft.cancel.<runId>, say); the
// attempt is held back rather than started (see cancelled).
var errBadNotice = errors.New("not a cancel notice of the run")

// cancelled reports whether t's attempt was cancelled before it started:
// by a notice this worker heard (recentCancels), or else by the run's
// notice in WEFT_CANCELS, which covers notices published while no worker
// was subscribed. It fails open when the stream cannot be read: when the
// lookup fails (within PublishTimeout) or is paused after a failure, the
// attempt is not reported cancelled. It fails closed when the stream
// holds a message that is not the run's notice (errBadNotice): held is
// true and the attempt must not start. This is safe because a legitimate
// notice always decodes and names its run, so a run never cancelled and
// never tampered with is never held.
func (w *Worker) cancelled(ctx context.Context, t task.Task, log *slog.Logger) (c task.Cancel, ok, held bool) {
	c, ok = w.running.recent.get(t.RunID)
	if !ok {
		lctx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
		defer cancel()
		var err error
		if c, ok, err = w.running.lookup.last(lctx, w.js, t.RunID); err != nil {
			if errors.Is(err, errBadNotice) {
				log.WarnContext(ctx, "worker: cancel notice undecodable; attempt held back, not started", "err", err)
				w.metrics.attemptHeld(ctx)
				return task.Cancel{}, false, true
			}
			level := slog.LevelWarn
			if errors.Is(err, errLookupPaused) {
				level = slog.LevelDebug
			}
			log.Log(ctx, level, "worker: cancel notice lookup failed; starting the attempt", "err", err)
			return task.Cancel{}, false, false
		}
		if ok {
			w.running.recent.add(c)
		}
	}
	return c, ok && c.Covers(t.StepID, t.LogicalAttemptID), false
}

// dropCancelled drops a delivered attempt its run's cancel notice covers
// and reports whether it did: the attempt is not started, nothing is
// reported (the engine recorded the step CANCELLED with RunCancelled),
// and the task is terminated so it is never redelivered. A term that
// fails is logged; the redelivery is dropped the same way. An attempt
// held back by an undecodable notice is not started either: it is nakked
// with RedeliveryDelay, so it is redelivered until the engine's sweep
// settles the step or an operator removes the message.
func (w *Worker) dropCancelled(ctx context.Context, msg jetstream.Msg, t task.Task, log *slog.Logger) bool {
	c, ok, held := w.cancelled(ctx, t, log)
	if held {
		if err := msg.NakWithDelay(w.cfg.RedeliveryDelay); err != nil {
			log.WarnContext(ctx, "worker: nak of a held-back attempt failed; it comes back after AckWait", "err", err)
		}
		return true
	}
	if !ok {
		return false
	}
	log.InfoContext(ctx, "worker: attempt of a cancelled run dropped, not started", "reason", c.Reason)
	if err := msg.TermWithReason("run cancelled"); err != nil {
		log.WarnContext(ctx, "worker: term of a cancelled attempt failed; it comes back and is dropped again", "err", err)
	}
	return true
}
