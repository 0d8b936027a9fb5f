package engine

import (
	"context"
	"crypto/rand"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/pkg/task"
)

// This file binds what workers report to the tasks the engine sent them
// (docs/worker-protocol.md, "Task tokens"). Every task carries
// a token, the engine's HMAC of its run, step and logical attempt
// (task.Signer, Config.TaskKeys). A worker result or a reconciliation
// lookup is taken only with the token of its own run, step and logical
// attempt; anything else is a forgery, or a message of a task signed with
// a key the engine no longer holds: it is dropped before any round sees
// it, counted and logged. A worker credential alone therefore cannot
// complete, fail or read another run's steps.

// Reasons a message's token is refused (attribute reason of the forged
// counters).
const (
	tokenMissing = "missing" // no token: a forger, or a task of an engine without keys
	tokenInvalid = "invalid" // a token, not the engine's for this attempt
)

// ephemeralTaskKeys returns a Signer of a random key, for a Service
// configured without TaskKeys.
func ephemeralTaskKeys() (*task.Signer, error) {
	key := make([]byte, task.MinTaskKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("engine: task key: %w", err)
	}
	return task.NewSigner(key)
}

// tokenRefusal returns why token is not the token of the attempt, or ""
// when it is.
func (s *Service) tokenRefusal(token, runID, stepID, logicalAttemptID string) string {
	switch {
	case token == "":
		return tokenMissing
	case !s.cfg.TaskKeys.Verify(token, runID, stepID, logicalAttemptID):
		return tokenInvalid
	}
	return ""
}

// forgedResult reports whether res must be dropped for its token, and if
// so counts and logs it. The log names the run, step and attempt the
// result claims and the worker id it gives, all as the sender wrote them.
func (s *Service) forgedResult(ctx context.Context, res task.Result) bool {
	reason := s.tokenRefusal(res.Token, res.RunID, res.StepID, res.LogicalAttemptID)
	if reason == "" {
		return false
	}
	s.forged.results.add(ctx, reason)
	s.logger.WarnContext(ctx, "engine: result without its task's token dropped", "reason", reason,
		"run_id", res.RunID, "step_id", res.StepID, "logical_attempt_id", res.LogicalAttemptID,
		"kind", string(res.Kind), "worker_id", res.WorkerID)
	return true
}

// forgedLookup returns why req must be refused for its token, counting and
// logging it, or "" when its token is that of its run and operation.
func (s *Service) forgedLookup(ctx context.Context, req task.ReconcileRequest) string {
	stepID, attempt, _ := task.StepOfOperation(req.OperationID)
	reason := s.tokenRefusal(req.Token, req.RunID, stepID, attempt)
	if reason == "" {
		return ""
	}
	s.forged.lookups.add(ctx, reason)
	s.logger.WarnContext(ctx, "engine: reconciliation lookup without its task's token refused", "reason", reason,
		"run_id", req.RunID, "operation_id", req.OperationID, "activity", req.ActivityName)
	return reason
}

// forgedMetrics count the messages refused for their token, by reason:
//
//	weft.engine.results.forged  counter  worker results dropped
//	weft.engine.lookups.forged  counter  reconciliation lookups refused
//
// Without a MeterProvider they count nothing.
type forgedMetrics struct {
	results, lookups forgedCounter
}

type forgedCounter struct {
	c       metric.Int64Counter // nil: no metrics
	reasons map[string]metric.AddOption
}

func newForgedMetrics(mp metric.MeterProvider) (forgedMetrics, error) {
	if mp == nil {
		return forgedMetrics{}, nil
	}
	meter := mp.Meter(meterName)
	counter := func(name, desc string) (forgedCounter, error) {
		c, err := meter.Int64Counter(name, metric.WithUnit("{message}"), metric.WithDescription(desc))
		if err != nil {
			return forgedCounter{}, fmt.Errorf("engine: metrics: %w", err)
		}
		fc := forgedCounter{c: c, reasons: map[string]metric.AddOption{}}
		for _, r := range []string{tokenMissing, tokenInvalid} {
			fc.reasons[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
		}
		return fc, nil
	}
	results, err := counter("weft.engine.results.forged",
		"Worker results dropped because they lack the token of their run, step and logical attempt, by reason.")
	if err != nil {
		return forgedMetrics{}, err
	}
	lookups, err := counter("weft.engine.lookups.forged",
		"Reconciliation lookups refused because they lack the token of their run and operation, by reason.")
	if err != nil {
		return forgedMetrics{}, err
	}
	return forgedMetrics{results: results, lookups: lookups}, nil
}

func (c forgedCounter) add(ctx context.Context, reason string) {
	if c.c != nil {
		c.c.Add(ctx, 1, c.reasons[reason])
	}
}
