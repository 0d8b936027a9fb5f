package deploy

import (
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
)

// runtimeMetrics checks that each service's /metrics serves the Go
// runtime's and the process's metrics beside its instruments.
func runtimeMetrics(t *testing.T, top *topology) {
	t.Helper()
	for name, o := range top.ops {
		u, err := url.Parse(o.url)
		require.NoError(t, err)
		s := metricstest.Get(t, httputil.NewSingleHostReverseProxy(u))
		require.Positive(t, s.Value(t, "go_goroutines", nil), "%s: go_goroutines", name)
		require.NotEmpty(t, s.Find("go_memstats_heap_alloc_bytes", nil), "%s: go_memstats_heap_alloc_bytes", name)
		require.Positive(t, s.Value(t, "process_resident_memory_bytes", nil), "%s: process_resident_memory_bytes", name)
		require.NotEmpty(t, s.Find("process_cpu_seconds_total", nil), "%s: process_cpu_seconds_total", name)
	}
}
