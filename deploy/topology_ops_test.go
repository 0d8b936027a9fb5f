package deploy

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/metrics/metricstest"
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

// maintainHealth runs maintain's healthcheck from compose.yaml, with the
// maintain service's environment, as the schema owner: it passes and
// deletes nothing, not even runID, which ended just now and which the
// retention variable set to 1ns would otherwise delete. Against a
// database that does not answer it fails.
func maintainHealth(t *testing.T, top *topology, runID string) {
	t.Helper()
	svc := service(t, loadProject(t), "maintain")
	test := svc.HealthCheck.Test
	require.Equal(t, maintainHealthcheck, []string(test))
	require.Equal(t, "/usr/local/bin/weft", test[1], "the image's binary; here the test's")
	args := []string(test[2:])
	every := env(svc, "WEFT_MAINTAIN_EVERY")
	require.NotEmpty(t, every, "the long-running pass, which the healthcheck overrides")
	vars := []string{"WEFT_MAINTAIN_EVERY=" + every, "WEFT_RUN_RETENTION=1ns"}

	ok := startProcess(t, "maintain healthcheck", top.bin.weft, args,
		append(vars, "WEFT_DATABASE_URL="+top.db.url("weft_migrator"))...)
	require.NoError(t, ok.wait(t), "maintain's healthcheck passes: %s", ok.out.String())
	require.Contains(t, ok.out.String(), "deleted 0 ended runs")
	status, body := httpGet(t, top.projector+"/v1/runs/"+runID, testToken)
	require.Equal(t, http.StatusOK, status, "the healthcheck deleted no run: %s", body)

	down := startProcess(t, "maintain healthcheck", top.bin.weft, args,
		append(vars, "WEFT_DATABASE_URL=postgres://weft_migrator:x@"+freeAddr(t)+"/weft?sslmode=disable&connect_timeout=5")...)
	require.Error(t, down.wait(t), "maintain's healthcheck fails when Postgres does not answer")
	require.Contains(t, down.out.String(), "database")
}
