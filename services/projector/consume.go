package projector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/bus/batch"
	"github.com/weftrun/weft/internal/bus/shards"
	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
)

// consume creates (or updates) the shared durable consumer on WEFT_EVENTS
// and feeds it to Concurrency shards, one run per shard. The shards keep the
// consumer (streams.Keeper): deleted, it is created again. The keeper's
// metrics are unregistered when ctx ends.
func (s *Service) consume(ctx context.Context) (*shards.Shards, error) {
	keeper, err := streams.NewKeeper(s.js, streams.EventsStream, jetstream.ConsumerConfig{
		Durable:       Consumer,
		FilterSubject: streams.EventsSubjectPrefix + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.cfg.AckWait,
		MaxAckPending: s.cfg.Concurrency * s.cfg.MaxBatch * 2,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}, streams.KeeperConfig{Logger: s.logger, MeterProvider: s.mp})
	if err != nil {
		return nil, fmt.Errorf("projector: consumer %s: %w", Consumer, err)
	}
	context.AfterFunc(ctx, func() { _ = keeper.Close() })
	settler := batch.New[[]events.Event](applyHandler{s}, batch.Config{
		Name: "projector", AckWait: s.cfg.AckWait, RetryDelay: s.cfg.RetryDelay, Logger: s.logger,
	})
	l := shards.New(keeper, s.cfg.Concurrency, s.cfg.MaxBatch, func(msgs []jetstream.Msg) {
		settler.Settle(ctx, msgs)
	}, shards.Linger(s.cfg.BatchLinger))
	// The shards outlive ctx by their drain (Serve stops them once ctx
	// ends): ending Start's context would be a hard stop.
	if err := l.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("projector: %w", err)
	}
	return l, nil
}

// applyHandler is the projector's batch.Handler: it applies the
// messages' events in one transaction, and the messages are acked after
// it commits. An undecodable message, and one whose event the log refutes
// (forged: verify.go), is terminated; if the transaction fails, every
// message is redelivered after RetryDelay, and re-applying what a crash
// left half done is a no-op.
type applyHandler struct{ s *Service }

// Decode returns m's events, of either form (streams.DecodeEvents); one
// without a run is undecodable.
func (applyHandler) Decode(m jetstream.Msg) ([]events.Event, bool, error) {
	evs, err := streams.DecodeEvents(m.Headers(), m.Data())
	if err != nil {
		return nil, false, err
	}
	for _, ev := range evs {
		if ev.RunID == "" {
			return nil, false, errNoRunID
		}
	}
	return evs, true, nil
}

// errNoRunID makes an event without a run id undecodable.
var errNoRunID = errors.New("projector: event without a run id")

// Handle applies the messages' events in one transaction (applyRuns), in
// a span per message, and terminates a message any of whose events is
// forged.
func (h applyHandler) Handle(ctx context.Context, items [][]events.Event, msgs []jetstream.Msg) ([]batch.Verdict, error) {
	byRun := map[string][]events.Event{}
	for _, evs := range items {
		for _, ev := range evs {
			byRun[ev.RunID] = append(byRun[ev.RunID], ev)
		}
	}
	spans := startApplySpans(ctx, h.s.cfg.TracerProvider, msgs)
	changes, err := h.s.applyRuns(ctx, byRun)
	spans.end(err)
	if err != nil {
		return nil, err
	}
	verdicts := make([]batch.Verdict, len(items))
	for i, evs := range items {
		verdicts[i] = batch.Ack
		for _, ev := range evs {
			if changes[ev.RunID].isForged(ev) {
				verdicts[i] = batch.Term
			}
		}
	}
	return verdicts, nil
}

// applyRuns projects each run's events (nil for a resync with no new
// event) and stores the changed snapshots, their watermarks and their gap
// alerts in one transaction of two round trips (internal/store/pipetx): BEGIN
// with the locking of the runs' rows (rowsLock), then the writes with
// COMMIT, a new run's row inserted whole. A resync that reads the log adds its reads. After the commit it
// tells the other projectors which runs changed (notifyChanged), reports
// alerts, records lag and wakes the readers waiting on the runs.
// It returns what it did to each run.
func (s *Service) applyRuns(ctx context.Context, byRun map[string][]events.Event) (map[string]runChange, error) {
	runIDs := sortedKeys(byRun)
	var changes map[string]runChange
	// A batch's statements reach each run's rows by primary key, but a
	// plan cached while run_snapshots was small would scan every snapshot
	// for the lock of a batch's rows (rowsLockSQL) and hash them all for
	// the check of bus events (busCheckSQL). So a batch runs with only
	// index probes left (pipetx.KeyPlansSQL).
	err := pipetx.BeginFunc(ctx, s.pool, []string{pipetx.KeyPlansSQL}, func(tx *pipetx.Tx) error {
		var err error
		changes, err = s.applyTx(ctx, tx, runIDs, byRun)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.notifyChanged(ctx, changedRuns(runIDs, changes))
	s.afterCommit(ctx, changes)
	return changes, nil
}

// applyTx is applyRuns' transaction; it commits it.
func (s *Service) applyTx(ctx context.Context, tx *pipetx.Tx, runIDs []string, byRun map[string][]events.Event) (map[string]runChange, error) {
	rows, logged, err := rowsLock(ctx, tx, runIDs, byRun)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	changes := make(map[string]runChange, len(runIDs))
	b := &pgx.Batch{}
	var saves []*runRow
	for _, id := range runIDs {
		r := rows[id]
		slices.SortFunc(byRun[id], func(a, b events.Event) int { return cmp.Compare(a.RunSeq, b.RunSeq) })
		bus, forged := verifyBus(id, r, byRun[id], logged)
		if r == nil { // not in the log: forged, or deleted by retention since
			changes[id] = runChange{forged: forged}
			continue
		}
		ch, err := s.project(ctx, tx, r, bus, now)
		if err != nil {
			return nil, err
		}
		ch.tenantID, ch.lastSeq, ch.gapSeen, ch.forged = r.ident.TenantID, r.snap.LastEventSeq, r.gapSeen, forged
		changes[id] = ch
		if ch.changed {
			saves = append(saves, r)
		}
		queueGapAlert(b, r, ch)
		queueForgedAlert(b, r, ch)
	}
	if err := queueSaves(b, saves); err != nil {
		return nil, err
	}
	if k := s.cfg.TestingKnobs.BeforeCommit; k != nil {
		k(b.Len())
	}
	if err := tx.CommitBatch(ctx, b); err != nil {
		return nil, fmt.Errorf("projector: save snapshots: %w", err)
	}
	return changes, nil
}

// changedRuns returns the runs of runIDs whose snapshot changes.
func changedRuns(runIDs []string, changes map[string]runChange) []string {
	var out []string
	for _, id := range runIDs {
		if changes[id].changed {
			out = append(out, id)
		}
	}
	return out
}
