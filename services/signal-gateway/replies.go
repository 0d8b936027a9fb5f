package gateway

import (
	"context"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// DefaultReplyPrefixes are the reply subjects the NATS ingress answers by
// default: the nats.go default inbox (_INBOX.) and the per-user inboxes
// Weft's own services use (_INBOX_<user>, cmd/weft connectNATS).
var DefaultReplyPrefixes = []string{"_INBOX.", "_INBOX_"}

// DefaultMaxErrorMessageBytes bounds the message, and each string detail,
// of a refusal the gateway sends back (Config.MaxErrorMessageBytes).
const DefaultMaxErrorMessageBytes = 512

// minErrorMessageBytes is the least MaxErrorMessageBytes: room for a few
// words and the mark of a cut.
const minErrorMessageBytes = 16

// truncatedMark ends a text cut to its limit.
const truncatedMark = "…"

// replyAllowed reports whether the ingress may answer on reply: an
// inbox-style subject that starts with one of Config.ReplyPrefixes. Any
// other subject may be a stream's (weft.results.<runId>, weft.events.…),
// and an answer there would be a message forged on the caller's behalf.
func (s *Service) replyAllowed(reply string) bool {
	return streams.InboxReply(reply, s.cfg.ReplyPrefixes)
}

// dropReply counts and logs, at debug level, a request whose reply
// subject the ingress will not answer; the request is not handled.
func (s *Service) dropReply(ctx context.Context, m *nats.Msg) {
	if s.metrics != nil {
		s.metrics.dropped.Add(ctx, 1)
	}
	s.logger.DebugContext(ctx, "ingress dropped a request with a reply subject that is not an inbox",
		"subject", truncate(m.Subject, s.cfg.MaxErrorMessageBytes), "reply", truncate(m.Reply, s.cfg.MaxErrorMessageBytes))
}

// capError returns e with its message and its string details cut to
// Config.MaxErrorMessageBytes, so a refusal never echoes more than that
// of what the caller sent (a subject, a decode error quoting the body). e
// itself is not changed.
func (s *Service) capError(e *intake.Error) *intake.Error {
	limit := s.cfg.MaxErrorMessageBytes
	c := *e
	c.Message = truncate(e.Message, limit)
	if len(e.Details) > 0 {
		c.Details = make(map[string]any, len(e.Details))
		for k, v := range e.Details {
			if str, ok := v.(string); ok {
				v = truncate(str, limit)
			}
			c.Details[k] = v
		}
	}
	return &c
}

// truncate cuts s to at most limit bytes, on a rune boundary, ending it
// with truncatedMark when it was cut.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := max(limit-len(truncatedMark), 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + truncatedMark
}
