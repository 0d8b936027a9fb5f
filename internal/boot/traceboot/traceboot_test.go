package traceboot_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftrun/weft/internal/boot/traceboot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// collector counts OTLP/HTTP trace exports.
type collector struct {
	srv     *httptest.Server
	exports atomic.Int32
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" && r.Method == http.MethodPost {
			c.exports.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestProviderSelection builds a provider from each environment, ends a
// span, shuts the provider down (flushing it) and checks whether the span
// was exported and had ids.
func TestProviderSelection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		vars     func(url string) map[string]string
		exported bool
		ids      bool
	}{
		{name: "nothing set: ids, no export", vars: func(string) map[string]string { return nil }, ids: true},
		{name: "base endpoint", vars: func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u}
		}, exported: true, ids: true},
		{name: "traces endpoint", vars: func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": u + "/v1/traces", "OTEL_TRACES_EXPORTER": "otlp"}
		}, exported: true, ids: true},
		{name: "exporter none", vars: func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u, "OTEL_TRACES_EXPORTER": "none"}
		}, ids: true},
		{name: "sdk disabled", vars: func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u, "OTEL_SDK_DISABLED": "true"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCollector(t)
			tp, shutdown, err := traceboot.NewTracerProvider(t.Context(), "test", env(tt.vars(c.srv.URL)))
			require.NoError(t, err)
			_, span := tp.Tracer("test").Start(t.Context(), "op")
			require.Equal(t, tt.ids, span.SpanContext().IsValid())
			span.End()
			require.NoError(t, shutdown(context.Background()))
			require.Equal(t, tt.exported, c.exports.Load() > 0)
		})
	}
}

func TestProviderRefusesUnsupportedSettings(t *testing.T) {
	t.Parallel()
	for _, vars := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		_, _, err := traceboot.NewTracerProvider(t.Context(), "test", env(vars))
		require.ErrorIs(t, err, traceboot.ErrUnsupported, "%v", vars)
	}
}
