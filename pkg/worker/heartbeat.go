package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/task"
)

// ErrHeartbeatTooLarge is the error of a heartbeat whose details exceed
// Config.MaxHeartbeatDetailsBytes.
var ErrHeartbeatTooLarge = errors.New("worker: heartbeat details too large")

// ErrNoHeartbeat is the error of Heartbeat on an Input the worker did not
// build (a test's, say): there is no attempt to report on.
var ErrNoHeartbeat = errors.New("worker: this input has no attempt to heartbeat for")

// heartbeat sends the heartbeats of one attempt.
type heartbeat struct {
	js      jetstream.JetStream
	subject string // the key's subject in the bucket
	rec     task.Heartbeat
	max     int
	timeout time.Duration
}

// heartbeatSubject is the subject a put of key in the heartbeats bucket
// publishes on, as a key-value put does.
func heartbeatSubject(key string) string {
	return "$KV." + task.HeartbeatsBucket + "." + key
}

// Heartbeat records that the attempt is alive and how far it got: details,
// any JSON-encodable value (a json.RawMessage is taken as is), or nil. A
// step with a heartbeatTimeout fails its attempt with HEARTBEAT_TIMEOUT
// (and retries it) when no heartbeat comes within that time; the next
// attempt finds the last details in Input.LastHeartbeat. Only the latest
// heartbeat of a step is kept, outside the run's event log, so call it as
// often as progress warrants, well within the step's heartbeatTimeout (a
// third of it, say). It waits for the store's ack, at most
// Config.PublishTimeout, and returns ErrHeartbeatTooLarge for details over
// Config.MaxHeartbeatDetailsBytes, or the store's error. Unrelated to
// WithHeartbeat, which keeps JetStream from redelivering the task. Safe
// for concurrent use.
func (in Input) Heartbeat(ctx context.Context, details any) error {
	if in.beat == nil {
		return ErrNoHeartbeat
	}
	return in.beat.send(ctx, details)
}

// send puts a heartbeat with details in the bucket.
func (h *heartbeat) send(ctx context.Context, details any) error {
	rec := h.rec
	if details != nil {
		b, err := json.Marshal(details)
		if err != nil {
			return fmt.Errorf("worker: encode heartbeat details: %w", err)
		}
		if len(b) > h.max {
			return fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrHeartbeatTooLarge, len(b), h.max)
		}
		rec.Details = b
	}
	rec.SentAt = time.Now().UTC()
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("worker: encode heartbeat: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if _, err := h.js.Publish(pctx, h.subject, data); err != nil {
		return fmt.Errorf("worker: heartbeat: %w", err)
	}
	return nil
}

// withHeartbeats returns in able to heartbeat, and, for a retry or a
// redelivery, with the step's last heartbeat details (lastHeartbeat).
func (w *Worker) withHeartbeats(ctx context.Context, in Input, log *slog.Logger) Input {
	key := task.HeartbeatKey(in.RunID, in.StepID)
	in.beat = &heartbeat{js: w.js, subject: heartbeatSubject(key), max: w.cfg.MaxHeartbeatDetailsBytes,
		timeout: w.cfg.PublishTimeout, rec: task.Heartbeat{SchemaVersion: task.SchemaVersion, RunID: in.RunID,
			StepID: in.StepID, LogicalAttemptID: in.LogicalAttemptID, WorkerID: w.cfg.WorkerID}}
	if in.LogicalAttemptID == "1" && in.EngineAttemptID == "1" {
		return in // nothing can have heartbeated before
	}
	last, err := w.lastHeartbeat(ctx, key, in.LogicalAttemptID)
	if err != nil {
		log.WarnContext(ctx, "worker: the last heartbeat could not be read; the attempt starts without it", "err", err)
	}
	in.LastHeartbeat = last
	return in
}

// lastHeartbeat reads the details of the step's last heartbeat, if an
// attempt no later than attempt sent it; nil when none did. It waits at
// most Config.PublishTimeout.
func (w *Worker) lastHeartbeat(ctx context.Context, key, attempt string) (json.RawMessage, error) {
	lctx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
	defer cancel()
	kv, err := w.js.KeyValue(lctx, task.HeartbeatsBucket)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(lctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec task.Heartbeat
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return nil, fmt.Errorf("undecodable heartbeat at revision %d: %w", e.Revision(), err)
	}
	sent, err1 := strconv.ParseUint(rec.LogicalAttemptID, 10, 64)
	now, err2 := strconv.ParseUint(attempt, 10, 64)
	if err1 != nil || err2 != nil || sent > now {
		return nil, nil
	}
	return rec.Details, nil
}
