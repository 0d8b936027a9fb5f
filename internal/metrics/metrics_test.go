package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/metrics"
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
