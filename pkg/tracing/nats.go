package tracing

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
)

// NATSCarrier adapts nats.Header to propagation.TextMapCarrier. Set writes
// the name exactly as given (W3C's lower case); Get finds a name exactly,
// else case-insensitively, since some clients canonicalise header names.
type NATSCarrier nats.Header

var _ propagation.TextMapCarrier = NATSCarrier(nil)

// Get returns the first value of key, or "".
func (c NATSCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set replaces the values of key with value.
func (c NATSCarrier) Set(key, value string) { c[key] = []string{value} }

// Keys lists the header names.
func (c NATSCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// ExtractNATS returns ctx with the remote span context carried by h, or
// ctx itself when h carries none. h may be nil.
func ExtractNATS(ctx context.Context, h nats.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return propagator().Extract(ctx, NATSCarrier(h))
}

// InjectNATS writes the span context of ctx into m's headers, allocating
// them when needed. When ctx carries no valid span context m is left as it
// is.
func InjectNATS(ctx context.Context, m *nats.Msg) {
	h := InjectHeaders(ctx, nil)
	if len(h) == 0 {
		return
	}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	for k, v := range h {
		m.Header[k] = []string{v}
	}
}
