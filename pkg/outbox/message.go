package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/tracing"
)

// Partitions is the number of outbox partitions. EnqueueBatch writes
// hash(OrderKey) mod Partitions into each row and a Relay serves partitions
// 0..Partitions-1, one relay per partition at a time. Both sides read this
// one constant, so they always agree within a build.
//
// It is a knob in the sense that a build may change it, not a runtime
// setting: rows written under one count are served by relays of that count.
// To change it, stop the writers, let the relay empty the outbox table,
// then deploy the new build (docs/outbox.md, "Partitions").
const Partitions = 8

// NotifyChannel is the Postgres NOTIFY channel on which EnqueueBatch wakes an
// idle relay at commit, with the partition number as payload; relays LISTEN
// on it. A busy relay is not notified: it claims again by itself
// (docs/outbox.md, "Waking the relay").
const NotifyChannel = "weft_outbox"

// ErrInvalidMessage is wrapped by every validation error EnqueueBatch
// returns.
var ErrInvalidMessage = errors.New("outbox: invalid message")

// Message is one message to publish to JetStream once the transaction that
// enqueued it commits.
type Message struct {
	// Subject is a concrete subject, every token valid
	// (streams.ValidSubject), for example streams.EventSubject(runID).
	Subject string
	// Headers are sent as NATS headers, names kept exactly as given. Names
	// starting with "Nats-" are reserved for the server and refused.
	// EnqueueBatch adds traceparent (and tracestate) from its ctx's span
	// context unless the message carries a traceparent already.
	Headers map[string]string
	// Payload is the message body, sent as is.
	Payload []byte
	// DedupeID is sent as Nats-Msg-Id. Required and deterministic: the
	// event id, or "<runId>/<runSeq>", never random, so a republish after a
	// crash is recognised by JetStream's duplicate window and by consumers.
	DedupeID string
	// OrderKey groups messages whose relative order must hold on the bus
	// (a run id): they are published in enqueue order, and a failing one
	// holds back the later ones. Empty means ordered with no other message
	// (the row is keyed by its DedupeID).
	OrderKey string
}

// orderKey is the key the row is stored and ordered under.
func (m Message) orderKey() string {
	if m.OrderKey == "" {
		return m.DedupeID
	}
	return m.OrderKey
}

// PartitionOf returns the outbox partition of an order key: FNV-1a (32 bit)
// of the key, mod Partitions. Stable across processes and builds.
func PartitionOf(orderKey string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(orderKey))
	return int(h.Sum32() % Partitions)
}

// Validate reports whether m can be enqueued. The error wraps
// ErrInvalidMessage and, for a bad subject, streams.ErrInvalidToken.
func (m Message) Validate() error {
	if err := streams.ValidSubject(m.Subject); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if strings.TrimSpace(m.DedupeID) == "" {
		return fmt.Errorf("%w: subject %s: DedupeID is required", ErrInvalidMessage, m.Subject)
	}
	for name, value := range m.Headers {
		if err := validHeader(name, value); err != nil {
			return fmt.Errorf("%w: subject %s: %w", ErrInvalidMessage, m.Subject, err)
		}
	}
	return nil
}

func validHeader(name, value string) error {
	if name == "" {
		return errors.New("empty header name")
	}
	if strings.HasPrefix(strings.ToLower(name), "nats-") {
		return fmt.Errorf("header %q: names starting with Nats- are reserved (the dedupe id is DedupeID)", name)
	}
	for _, r := range name {
		if r == ':' || r > unicode.MaxASCII || unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("header name %q: %q is not allowed", name, r)
		}
	}
	if strings.ContainsAny(value, "\r\n") || !utf8.ValidString(value) {
		return fmt.Errorf("header %q: value must be valid UTF-8 without line breaks", name)
	}
	return nil
}

// enqueueSQL inserts the rows in array order (ids follow it) and calls
// weft_outbox_wake with the partitions touched, all in one statement. The
// wake function notifies the partitions whose relay is idle; Postgres
// delivers the notifications at commit and folds duplicates within a
// transaction.
const enqueueSQL = `
WITH ins AS (
	INSERT INTO outbox (partition, order_key, subject, headers, payload, dedupe_id)
	SELECT u.partition, u.order_key, u.subject, u.headers::jsonb, u.payload, u.dedupe_id
	FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[])
		WITH ORDINALITY AS u(partition, order_key, subject, headers, payload, dedupe_id, ord)
	ORDER BY u.ord
	RETURNING partition
)
SELECT weft_outbox_wake(array_agg(DISTINCT partition)) FROM ins`

// EnqueueBatch validates msgs and queues on b their insert into the
// outbox, one statement, for a caller that sends it in one round trip with
// other statements of its transaction (its COMMIT, say): the messages are
// published if and only if that transaction commits. Within one OrderKey
// they are published in the order given, after any message of that key
// enqueued by an earlier transaction, provided writers of one key
// serialise (the run head compare-and-swap does). An error of the insert
// is what b's BatchResults.Close returns. All messages are validated
// before anything is queued: an invalid one fails the call with an error
// wrapping ErrInvalidMessage and leaves b as it was. No messages queues
// nothing. When ctx carries a valid span context, every message without a
// traceparent header is stored with the W3C trace context of ctx (the
// caller's map is not modified), so the trace survives the round trip
// through Postgres. Weft's writers enqueue through
// pkg/journal's Write, which commits the messages with the
// events they carry.
func EnqueueBatch(ctx context.Context, b *pgx.Batch, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	args, err := enqueueArgs(ctx, msgs)
	if err != nil {
		return err
	}
	b.Queue(enqueueSQL, args...).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(nil); err != nil { // weft_outbox_wake returns void
			return fmt.Errorf("outbox: enqueue %d messages: %w", len(msgs), err)
		}
		return nil
	})
	return nil
}

// EnqueueTx enqueues msgs inside tx, in one round trip, as EnqueueBatch
// queues them: they reach the bus only if tx commits. It is the form for
// a writer outside Weft that commits its own rows with bus messages; an
// error wraps ErrInvalidMessage when a message is invalid, and nothing is
// sent then.
func EnqueueTx(ctx context.Context, tx pgx.Tx, msgs ...Message) error {
	b := &pgx.Batch{}
	if err := EnqueueBatch(ctx, b, msgs...); err != nil || b.Len() == 0 {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// enqueueArgs validates msgs and returns enqueueSQL's arguments: the
// rows' columns as arrays, in the order of msgs. A message without a
// traceparent header gets the trace context of ctx, when it has one.
func enqueueArgs(ctx context.Context, msgs []Message) ([]any, error) {
	n := len(msgs)
	traced := trace.SpanContextFromContext(ctx).IsValid()
	parts, keys, subjects := make([]int32, n), make([]string, n), make([]string, n)
	headers, payloads, dedupe := make([]string, n), make([][]byte, n), make([]string, n)
	for i, m := range msgs {
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("message %d of %d: %w", i+1, n, err)
		}
		if traced && m.Headers[tracing.HeaderTraceparent] == "" {
			m.Headers = tracing.InjectHeaders(ctx, maps.Clone(m.Headers))
		}
		h, err := encodeHeaders(m.Headers)
		if err != nil {
			return nil, fmt.Errorf("outbox: message %d of %d: %w", i+1, n, err)
		}
		keys[i] = m.orderKey()
		parts[i] = int32(PartitionOf(keys[i]))
		subjects[i], headers[i], dedupe[i] = m.Subject, h, m.DedupeID
		payloads[i] = m.Payload
		if payloads[i] == nil {
			payloads[i] = []byte{}
		}
	}
	return []any{parts, keys, subjects, headers, payloads, dedupe}, nil
}

func encodeHeaders(h map[string]string) (string, error) {
	if len(h) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("encode headers: %w", err)
	}
	return string(b), nil
}
