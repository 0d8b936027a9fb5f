package engine

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/pkg/streams"
)

// DefaultReconcileReplyPrefixes are the reply subjects the engine answers
// reconciliation lookups on by default (Config.ReconcileReplyPrefixes):
// the workers' inboxes (_INBOX_worker for queue default, _INBOX_worker-<Q>
// for queue Q, cmd/weft connectNATS) and the nats.go default inbox
// (_INBOX.), which the worker SDK uses on a connection of its own. None of
// them is a stream's subject or the JetStream API's.
var DefaultReconcileReplyPrefixes = []string{"_INBOX_worker.", "_INBOX_worker-", "_INBOX."}

// reconcileReplyAllowed reports whether the engine may answer a lookup on
// reply: a subject longer than, and starting with, one of
// Config.ReconcileReplyPrefixes. Any other subject may be a stream's
// (weft.cancel.<runId>, weft.events.…) or the JetStream API's, and an
// answer there would be a message published with the engine's rights on
// the requester's behalf.
func (s *Service) reconcileReplyAllowed(reply string) bool {
	return streams.InboxReply(reply, s.cfg.ReconcileReplyPrefixes)
}

// dropReconcileReply counts (weft.engine.lookups.reply_refused) and logs,
// at debug level, a lookup whose reply subject the engine will not
// answer; the lookup is not made.
func (s *Service) dropReconcileReply(ctx context.Context, m *nats.Msg) {
	if s.replyRefused != nil {
		s.replyRefused.Add(ctx, 1)
	}
	s.logger.DebugContext(ctx, "engine: reconciliation lookup with a reply subject that is not a worker inbox dropped",
		"reply", truncateSubject(m.Reply))
}

// maxLoggedSubject bounds a subject the engine logs on a requester's behalf.
const maxLoggedSubject = 256

func truncateSubject(s string) string {
	if len(s) <= maxLoggedSubject {
		return s
	}
	return s[:maxLoggedSubject] + "…"
}

// newReplyRefusedCounter returns weft.engine.lookups.reply_refused, nil
// without a MeterProvider.
func newReplyRefusedCounter(mp metric.MeterProvider) (metric.Int64Counter, error) {
	if mp == nil {
		return nil, nil
	}
	c, err := mp.Meter(meterName).Int64Counter("weft.engine.lookups.reply_refused", metric.WithUnit("{message}"),
		metric.WithDescription("Reconciliation lookups dropped unanswered because their reply subject is not an allowed inbox."))
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	return c, nil
}
