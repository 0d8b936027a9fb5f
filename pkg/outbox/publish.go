package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// outcomeKind is what became of one row's publish.
type outcomeKind int

const (
	notSent   outcomeKind = iota // not published in this batch
	acked                        // stored, or already in the stream (duplicate)
	failed                       // refused for this message: charged to the row
	transport                    // the bus did not answer or was full: not charged
)

type outcome struct {
	kind      outcomeKind
	duplicate bool
	err       error
	ackedAt   time.Time
}

// errAckTimeout marks a publish not acked within AckTimeout.
var errAckTimeout = errors.New("outbox: no ack within AckTimeout")

// errStreamFull marks a publish refused because the stream reached its
// limits (DiscardNew): the bus is full, not the row at fault.
var errStreamFull = errors.New("outbox: stream full (DiscardNew refused the message)")

// errReconnected marks rows left unsent because the connection changed
// during the batch.
var errReconnected = errors.New("outbox: NATS connection changed during the batch")

type inflight struct {
	idx      int
	future   jetstream.PubAckFuture
	deadline time.Time
}

// publish sends rows in id order with up to MaxInFlight acks outstanding
// across keys and at most one per key, and returns each row's outcome.
// Order per key holds because a row is sent only once the previous row of
// its key is acked: after a failure of key K no more rows of K are sent;
// after a transport failure, or once the connection has changed, no more
// rows at all. Keys pipeline past each other, so throughput comes from the
// many runs a partition carries. The client's retry on "no responders" is
// off: it would resend a message after later ones. The error is ctx's,
// when it ends.
func (w *worker) publish(ctx context.Context, rows []row) ([]outcome, error) {
	out := make([]outcome, len(rows))
	spans := w.r.newPublishSpans(len(rows))
	defer spans.end(out)
	nc := w.r.js.Conn()
	conn0 := nc.Stats().Reconnects
	blocked := make(map[string]bool)
	pending := make(map[string]bool) // keys with a publish not yet resolved
	halted := false
	var queue []inflight
	resolve := func(p inflight) error {
		o, err := w.await(ctx, p)
		if err != nil {
			return err
		}
		out[p.idx] = o
		delete(pending, rows[p.idx].orderKey)
		if o.kind != acked {
			blocked[rows[p.idx].orderKey] = true
			halted = halted || o.kind == transport
		}
		return nil
	}
	for i, r := range rows {
		for len(queue) >= w.r.cfg.MaxInFlight || pending[r.orderKey] {
			if err := resolve(queue[0]); err != nil {
				return nil, err
			}
			queue = queue[1:]
		}
		if halted || blocked[r.orderKey] {
			continue
		}
		if nc.Stats().Reconnects != conn0 {
			halted, out[i] = true, outcome{kind: transport, err: errReconnected}
			continue
		}
		m := natsMsg(r)
		spans.start(ctx, i, r, m)
		f, err := w.r.js.PublishMsgAsync(m, jetstream.WithMsgID(r.dedupeID), jetstream.WithRetryAttempts(0))
		if err != nil {
			out[i] = classify(err)
			blocked[r.orderKey] = true
			halted = halted || out[i].kind == transport
			continue
		}
		queue = append(queue, inflight{idx: i, future: f, deadline: time.Now().Add(w.r.cfg.AckTimeout)})
		pending[r.orderKey] = true
	}
	for _, p := range queue {
		if err := resolve(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// await waits for one publish's ack or error until its deadline.
func (w *worker) await(ctx context.Context, p inflight) (outcome, error) {
	t := time.NewTimer(time.Until(p.deadline))
	defer t.Stop()
	select {
	case ack := <-p.future.Ok():
		return outcome{kind: acked, duplicate: ack.Duplicate, ackedAt: time.Now()}, nil
	case err := <-p.future.Err():
		return classify(err), nil
	case <-t.C:
		return outcome{kind: transport, err: errAckTimeout}, nil
	case <-ctx.Done():
		return outcome{}, ctx.Err()
	}
}

// probeNoResponders tells "no stream captures this subject" (the row's
// fault) from "JetStream is not there" (the bus's, as while a server
// restarts): both answer a publish with no responders. When no publish of
// the batch was acked, the relay asks JetStream for the account's info;
// if that fails too, the no-responders failures become transport failures,
// not charged to their rows.
func (w *worker) probeNoResponders(ctx context.Context, out []outcome) {
	var suspects []int
	for i, o := range out {
		if o.kind == acked {
			return // the bus answered
		}
		if o.kind == failed && errors.Is(o.err, jetstream.ErrNoStreamResponse) {
			suspects = append(suspects, i)
		}
	}
	if len(suspects) == 0 {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, w.r.cfg.AckTimeout)
	defer cancel()
	_, err := w.r.js.AccountInfo(pctx)
	if err == nil {
		return
	}
	for _, i := range suspects {
		out[i] = outcome{kind: transport, err: fmt.Errorf("%w (JetStream unreachable: %w)", out[i].err, err)}
	}
}

func natsMsg(r row) *nats.Msg {
	m := nats.NewMsg(r.subject)
	m.Data = r.payload
	for k, v := range r.headers {
		m.Header[k] = []string{v} // exactly as enqueued, not canonicalised
	}
	return m
}

// classify sorts a publish error: the bus's own trouble (unreachable, ack
// lost, full, temporarily unavailable) is not the row's fault and is not
// charged; anything else, such as no stream capturing the subject or a
// message too large, is charged to the row and ends in outbox_dead.
func classify(err error) outcome {
	if streamFull(err) {
		return outcome{kind: transport, err: fmt.Errorf("%w: %w", errStreamFull, err)}
	}
	if busFailure(err) {
		return outcome{kind: transport, err: err}
	}
	return outcome{kind: failed, err: err}
}

// streamFull reports a store failure for "maximum bytes exceeded",
// "maximum messages exceeded" and the like. "message too large" is the
// row's fault and not matched.
func streamFull(err error) bool {
	const storeFailed = 10077 // JSStreamStoreFailedF: carries the store's reason
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == storeFailed &&
		strings.Contains(apiErr.Description, "exceeded")
}

func busFailure(err error) bool {
	for _, target := range []error{
		errAckTimeout, nats.ErrDisconnected, nats.ErrConnectionClosed, nats.ErrConnectionDraining,
		nats.ErrConnectionReconnecting, nats.ErrReconnectBufExceeded, nats.ErrNoServers, nats.ErrTimeout,
		jetstream.ErrAsyncPublishTimeout, jetstream.ErrTooManyStalledMsgs,
		context.Canceled, context.DeadlineExceeded,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503 // temporarily unavailable, no quorum
}
