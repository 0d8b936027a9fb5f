package outbox

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// worker serves a set of partitions, those its relay won together, for as
// long as the relay holds their locks: claim the next rows of each in id
// order (one statement for all), publish them, settle the outcome, and
// claim again while claims find rows: at once after a claim that filled a
// partition's BatchSize, after IdleGrace after any other. When a claim
// finds none, the worker waits IdleGrace once more, then arms its
// partitions (writers notify from then on) and claims once more; only an
// empty claim while armed lets it sleep until a wake-up. Any rows found
// disarm them again, so writers of a busy relay never notify. One worker
// for many partitions wakes, claims and settles once where a worker per
// partition would each do it, which is most of a relay's cost at low load.
type worker struct {
	r          *Relay
	partitions []int32            // sorted
	wake       chan struct{}      // a pending wake-up; capacity 1
	cancel     context.CancelFunc // stops the worker at once
	done       chan struct{}      // closed when run returns
	pauses     int                // consecutive batches cut short by the bus or the database
	armed      bool               // writers notify these partitions (see setArmed)
	armKnown   bool               // armed matches outbox_wake (false until the first setArmed)
	settled    bool               // armed, and no writer that missed the arming is still open
	lingered   bool               // the last claim was followed by an IdleGrace wait
}

// startWorker runs a worker for partitions until soft ends (after the
// batch in hand), ctx ends or its cancel is called (at once).
func startWorker(ctx, soft context.Context, r *Relay, partitions []int32) *worker {
	wctx, cancel := context.WithCancel(ctx)
	partitions = slices.Sorted(slices.Values(partitions))
	w := &worker{r: r, partitions: partitions, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go w.run(wctx, soft)
	return w
}

// poke wakes the worker if it is idle, or makes its next wait return at
// once if it is busy. It never blocks.
func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) run(ctx, soft context.Context) {
	defer close(w.done)
	for soft.Err() == nil && ctx.Err() == nil {
		res, err := w.step(ctx)
		linger := false
		if err == nil && res.transport == nil {
			// Busy after rows, idle (arm, then claim once more) after none
			// and the grace.
			linger = w.lingers(res.claimed, res.full)
			err = w.setArmed(ctx, res.claimed == 0 && !linger)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil || res.transport != nil:
			// The database or the bus failed, not a row: pause, ignoring
			// wake-ups, so an outage does not become a busy loop.
			w.pauses++
			d := w.r.cfg.backoff(w.pauses)
			w.logPause(ctx, d, cmp.Or(err, res.transport))
			w.sleep(ctx, soft, d, false)
		case linger:
			w.pauses = 0
			w.sleep(ctx, soft, w.r.cfg.IdleGrace, true)
		case !res.sleep:
			w.pauses = 0 // rows may be waiting, or the arming needs its claim: no sleep
		default:
			w.pauses = 0
			d := w.r.cfg.PollInterval
			if res.hasDue {
				d = min(d, res.nextDue)
			}
			w.sleep(ctx, soft, d, true)
		}
	}
}

// lingers reports whether the worker waits IdleGrace before its next
// claim, given the rows the last claim found and whether it filled some
// partition's BatchSize: not after a full claim (more rows are waiting);
// after a partial one, so the rows written meanwhile share the next claim
// and settlement; after an empty one, once, unless the claim before it
// lingered too or the partitions are armed (the worker is on its way to
// sleep). With the grace off it never does.
func (w *worker) lingers(claimed int, full bool) bool {
	grace := w.r.cfg.IdleGrace > 0
	switch {
	case full:
		w.lingered = false
	case claimed > 0:
		w.lingered = grace
	case w.lingered || w.armed || !grace:
		w.lingered = false
	default:
		w.lingered = true
	}
	return w.lingered
}

// logPause logs why the worker pauses. A full stream is logged as an error
// with alert=OUTBOX_STREAM_FULL: rows pile up in the outbox until an
// operator raises the stream's limits or consumers catch up, and nothing is
// dropped meanwhile.
func (w *worker) logPause(ctx context.Context, d time.Duration, err error) {
	if errors.Is(err, errStreamFull) {
		w.r.logger.ErrorContext(ctx, "outbox: stream full; publishing paused, rows kept",
			"alert", "OUTBOX_STREAM_FULL", "partitions", w.partitions, "pause", d, "err", err)
		return
	}
	w.r.logger.WarnContext(ctx, "outbox: batch cut short; pausing",
		"partitions", w.partitions, "pause", d, "err", err)
}

// sleep waits d, or less when the relay stops or, if wakeable, a wake-up
// arrives.
func (w *worker) sleep(ctx, soft context.Context, d time.Duration, wakeable bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	var wake chan struct{}
	if wakeable {
		wake = w.wake
	}
	select {
	case <-t.C:
	case <-wake:
	case <-soft.Done():
	case <-ctx.Done():
	}
}

type stepResult struct {
	claimed   int           // rows claimed
	full      bool          // some partition gave BatchSize rows: claim again at once
	sleep     bool          // nothing claimed while armed: the worker may sleep
	transport error         // the batch was cut short by the bus
	nextDue   time.Duration // until the earliest backoff expires, if hasDue
	hasDue    bool
}

// step claims, publishes and settles one batch.
func (w *worker) step(ctx context.Context) (stepResult, error) {
	cfg := w.r.cfg
	rows, err := outboxClaim(ctx, w.r.pool, w.partitions, cfg.BatchSize)
	if err != nil {
		return stepResult{}, err
	}
	res := stepResult{claimed: len(rows), full: fills(rows, cfg.BatchSize),
		sleep: len(rows) == 0 && w.armed && w.settled}
	if len(rows) > 0 {
		if cfg.TestingKnobs.BeforePublish != nil {
			cfg.TestingKnobs.BeforePublish()
		}
		out, err := w.publish(ctx, rows)
		if err != nil {
			return stepResult{}, err
		}
		w.probeNoResponders(ctx, out)
		if cfg.TestingKnobs.AfterPublish != nil {
			cfg.TestingKnobs.AfterPublish()
		}
		acts, s := w.plan(rows, out)
		if err := outboxSettle(ctx, w.r.pool, w.partitions, s); err != nil {
			return stepResult{}, err
		}
		res.transport = w.report(ctx, rows, out, acts)
	}
	if res.sleep {
		res.nextDue, res.hasDue, err = outboxNextDue(ctx, w.r.pool, w.partitions)
	}
	return res, err
}

// fills reports whether a claim's rows, which come partition by partition,
// hold limit rows of one partition: that partition has more waiting.
func fills(rows []row, limit int) bool {
	n := 0
	for i, r := range rows {
		if i == 0 || r.partition != rows[i-1].partition {
			n = 0
		}
		if n++; n >= limit {
			return true
		}
	}
	return false
}

// action is what settling does to one row of a batch.
type action int

const (
	keep    action = iota // stays as it is: republished by a later batch
	deleted               // acked: deleted
	retried               // failed: attempts+1, backoff
	dead                  // failed MaxAttempts times: moved to outbox_dead
)

// plan turns a batch's outcomes into actions, per order key in id order:
// rows up to the key's first non-acked row are deleted; that row is
// charged when the failure was its own (not the bus's) and is retried or
// dead-lettered; every later row of the key stays put, acked or not, so it
// is never deleted ahead of an earlier row.
func (w *worker) plan(rows []row, out []outcome) ([]action, settlement) {
	acts := make([]action, len(rows))
	blocked := make(map[string]bool)
	var s settlement
	for i, r := range rows {
		if blocked[r.orderKey] {
			continue
		}
		switch out[i].kind {
		case acked:
			acts[i] = deleted
			s.published = append(s.published, r.id)
			continue
		case failed:
			n := r.attempts + 1
			rr := retryRow{id: r.id, err: truncate(out[i].err.Error(), 2000)}
			if n >= w.r.cfg.MaxAttempts {
				acts[i] = dead
				s.dead = append(s.dead, rr)
			} else {
				acts[i] = retried
				rr.delay = w.r.cfg.backoff(n)
				s.retries = append(s.retries, rr)
			}
		case notSent, transport:
		}
		blocked[r.orderKey] = true
	}
	return acts, s
}

// report counts and logs a settled batch and returns the batch's first
// transport error, if any.
func (w *worker) report(ctx context.Context, rows []row, out []outcome, acts []action) error {
	var transportErr error
	failedKeys := make(map[string]bool)
	for i, r := range rows {
		o := out[i]
		if o.kind == transport && transportErr == nil {
			transportErr = o.err
		}
		if o.kind == failed || o.kind == transport {
			failedKeys[r.orderKey] = true
		} else if o.kind == acked && failedKeys[r.orderKey] {
			w.r.logger.WarnContext(ctx, "outbox: a later message of an order key reached the bus before an earlier one that failed",
				"partition", r.partition, "order_key", r.orderKey, "dedupe_id", r.dedupeID)
		}
		w.reportRow(ctx, r, o, acts[i])
	}
	if transportErr != nil {
		w.r.stats.transport.Add(1)
	}
	return transportErr
}

func (w *worker) reportRow(ctx context.Context, r row, o outcome, a action) {
	st := &w.r.stats
	switch a {
	case deleted:
		if o.duplicate {
			st.duplicates.Add(1)
		} else {
			st.published.Add(1)
		}
		if f := w.r.cfg.ObservePublish; f != nil {
			f(r.createdAt, o.ackedAt)
		}
		w.r.metrics.observePublish(ctx, r.createdAt, o.ackedAt)
	case retried:
		st.failures.Add(1)
		w.r.logger.WarnContext(ctx, "outbox: publish failed; will retry",
			"partition", r.partition, "subject", r.subject, "dedupe_id", r.dedupeID,
			"attempts", r.attempts+1, "err", o.err)
	case dead:
		st.failures.Add(1)
		st.dead.Add(1)
		w.r.logger.ErrorContext(ctx, "outbox: message moved to outbox_dead after repeated publish failures",
			"alert", "OUTBOX_DLQ", "partition", r.partition, "subject", r.subject,
			"dedupe_id", r.dedupeID, "order_key", r.orderKey, "outbox_id", r.id,
			"attempts", r.attempts+1, "last_error", o.err.Error())
	case keep:
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
