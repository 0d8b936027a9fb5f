package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
)

func TestHandlerServesInstruments(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	hist, err := mp.Meter("test").Float64Histogram("weft.test.lag", metric.WithUnit("s"))
	require.NoError(t, err)
	hist.Record(t.Context(), 0.25)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `weft_test_lag_seconds_bucket{`)
	require.Contains(t, string(body), `weft_test_lag_seconds_count{`)
}

// Every handler serves the Go runtime's and the process's metrics beside
// the instruments, and two providers (two services of weft dev) each have
// their own.
func TestHandlerServesRuntimeAndProcessMetrics(t *testing.T) {
	t.Parallel()
	for range 2 {
		_, h, err := metrics.New()
		require.NoError(t, err)
		s := metricstest.Get(t, h)
		require.Positive(t, s.Value(t, "go_goroutines", nil), "go_goroutines")
		require.NotEmpty(t, s.Find("go_memstats_alloc_bytes", nil), "go_memstats_alloc_bytes")
		require.Positive(t, s.Value(t, "process_resident_memory_bytes", nil), "process_resident_memory_bytes")
		require.NotEmpty(t, s.Find("process_cpu_seconds_total", nil), "process_cpu_seconds_total")
		require.Positive(t, s.Value(t, "process_open_fds", nil), "process_open_fds")
	}
}
