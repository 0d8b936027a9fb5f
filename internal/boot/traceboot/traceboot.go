// Package traceboot builds a service's trace.TracerProvider from the
// standard OpenTelemetry environment variables. It is kept apart from
// internal/tracing so that packages which only propagate context (the
// worker SDK, the outbox) do not link the OTLP exporter.
package traceboot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ErrUnsupported is wrapped by the error NewTracerProvider returns for an
// exporter or protocol it does not offer.
var ErrUnsupported = errors.New("traceboot: unsupported trace export setting")

// NewTracerProvider returns the tracer provider of service and its
// shutdown, which flushes the spans not yet exported (call it once, after
// the service stopped, with a ctx bounding the flush).
//
// It reads the standard variables through getenv (os.Getenv in a binary):
//   - OTEL_SDK_DISABLED=true: a no-op provider; spans carry only the
//     context they continue.
//   - OTEL_TRACES_EXPORTER: "otlp" (the default) or "none"; any other value
//     is an error wrapping ErrUnsupported.
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or
//     OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended): when either
//     is set and the exporter is otlp, spans are batched and exported over
//     OTLP/HTTP (protobuf). OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL may only be
//     http/protobuf. Headers, timeout, compression and TLS come from the
//     exporter's own OTEL_EXPORTER_OTLP_* variables.
//   - OTEL_SERVICE_NAME overrides service as the resource's service.name.
//
// Otherwise it returns an SDK provider without exporter: spans get real
// trace and span ids, for logs and propagation, and are dropped when they
// end.
func NewTracerProvider(ctx context.Context, service string, getenv func(string) string) (trace.TracerProvider, func(context.Context) error, error) {
	noShutdown := func(context.Context) error { return nil }
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return noop.NewTracerProvider(), noShutdown, nil
	}
	endpoint, err := exportEndpoint(getenv)
	if err != nil {
		return nil, nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(resource.NewSchemaless(
		attribute.String("service.name", firstNonEmpty(getenv("OTEL_SERVICE_NAME"), service))))}
	if endpoint != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
		if err != nil {
			return nil, nil, fmt.Errorf("traceboot: OTLP exporter for %s: %w", endpoint, err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tp, tp.Shutdown, nil
}

// exportEndpoint is the OTLP/HTTP traces URL the environment asks for, or
// "" when it asks for no export.
func exportEndpoint(getenv func(string) string) (string, error) {
	switch exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exporter {
	case "none":
		return "", nil
	case "", "otlp":
	default:
		return "", fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q (Weft offers otlp and none)", ErrUnsupported, exporter)
	}
	endpoint := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if endpoint == "" {
		if base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); base != "" {
			endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return "", nil
	}
	protocol := firstNonEmpty(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	if protocol != "" && protocol != "http/protobuf" {
		return "", fmt.Errorf("%w: OTLP protocol %q (Weft exports http/protobuf)", ErrUnsupported, protocol)
	}
	return endpoint, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
