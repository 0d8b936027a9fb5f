package worker

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/tracing"
)

// tracerName names the worker's tracer.
const tracerName = "github.com/weftrun/weft/pkg/worker"

// startSpan opens the span of one delivery of t, parented to the trace
// context in msg's headers, and returns ctx carrying it: the activity runs
// under it and the results publish carries its context.
func (w *Worker) startSpan(ctx context.Context, msg jetstream.Msg, t task.Task, attempt string) (context.Context, trace.Span) {
	ctx = tracing.ExtractNATS(ctx, msg.Headers())
	return w.tracer.Start(ctx, "activity "+t.Activity,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("weft.run_id", t.RunID), attribute.String("weft.step_id", t.StepID),
			attribute.String("weft.logical_attempt_id", t.LogicalAttemptID), attribute.String("weft.engine_attempt_id", attempt),
			attribute.String("weft.activity", t.Activity)))
}

// endSpan records the attempt's outcome on span: an error status for a
// failed attempt or one cut short.
func endSpan(span trace.Span, r task.Result, finished bool) {
	switch {
	case !finished:
		span.SetStatus(codes.Error, "stopped mid-activity; the task is given back")
	case r.Error != nil:
		span.SetAttributes(attribute.String("weft.error_code", r.Error.Code))
		span.SetStatus(codes.Error, r.Error.Code)
	}
}
