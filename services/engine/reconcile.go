package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// lookupTimeout bounds the database read of one reconciliation lookup.
// The worker waits about as long for the reply and then treats the lookup
// as unavailable.
const lookupTimeout = 5 * time.Second

// serveReconcile answers workers' reconciliation lookups
// (docs/reconciliation.md): core NATS requests on streams.ReconcileSubject,
// in the queue group streams.ReconcileQueue so one engine answers each.
// Workers never touch Postgres; this is how they read the records the
// rounds write. Requests are answered one at a time: a lookup happens only
// when a keyed attempt may have run before. The returned stop drains the
// subscription.
func (s *Service) serveReconcile(ctx context.Context) (stop func(), err error) {
	sub, err := s.nc.QueueSubscribe(streams.ReconcileSubject, streams.ReconcileQueue, func(m *nats.Msg) {
		s.answerReconcile(ctx, m)
	})
	if err != nil {
		return nil, fmt.Errorf("engine: subscribe %s: %w", streams.ReconcileSubject, err)
	}
	fctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	if err := s.nc.FlushWithContext(fctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("engine: subscribe %s: %w", streams.ReconcileSubject, err)
	}
	return func() { _ = sub.Drain() }, nil
}

// answerReconcile replies to one lookup with a task.ReconcileReply: the
// records found, or, when the lookup could not be made, an Error, which
// the worker treats as unavailable (never as "no record").
func (s *Service) answerReconcile(ctx context.Context, m *nats.Msg) {
	if m.Reply == "" {
		return // a publish, not a request: nobody to answer
	}
	if !s.reconcileReplyAllowed(m.Reply) {
		s.dropReconcileReply(ctx, m)
		return
	}
	reply := s.reconcileLookup(ctx, m.Data)
	data, err := json.Marshal(reply)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		s.logger.WarnContext(ctx, "engine: reconciliation reply failed", "err", err)
	}
}

// ErrLookupToken begins the Error of the reply to a lookup whose token is
// missing or not the engine's for its run and operation: nothing is read.
const ErrLookupToken = "the request does not carry its task's token"

// reconcileLookup decodes a ReconcileRequest and, when it carries the
// token of its run and operation, reads its records.
func (s *Service) reconcileLookup(ctx context.Context, data []byte) task.ReconcileReply {
	var req task.ReconcileRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return task.ReconcileReply{SchemaVersion: task.SchemaVersion, Error: "the request is not a ReconcileRequest: " + err.Error()}
	}
	if reason := s.forgedLookup(ctx, req); reason != "" {
		return task.ReconcileReply{SchemaVersion: task.SchemaVersion,
			Error: ErrLookupToken + " (" + reason + ")"}
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	reply, err := round.ReconciliationGet(qctx, s.pool, req)
	if err != nil {
		const msg = "engine: reconciliation lookup failed"
		if errors.Is(err, round.ErrBadLookup) { // the worker's fault: no alarm
			s.logger.InfoContext(ctx, msg, "run_id", req.RunID, "err", err)
		} else {
			s.logger.WarnContext(ctx, msg, "run_id", req.RunID, "err", err)
		}
		return task.ReconcileReply{SchemaVersion: task.SchemaVersion, Error: err.Error()}
	}
	return reply
}
