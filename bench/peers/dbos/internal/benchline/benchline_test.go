package benchline_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/bench/peers/dbos/internal/benchline"
)

const output = `goos: linux
pkg: github.com/weftrun/weft/bench
BenchmarkSystem/closed-2         	       1	        12.0 ceiling_%	  1500 ceiling_commits/s	  0 ns/op	  180.5 runs/s	  40.1 p50_ms	  90.2 p99_ms
    system_test.go:80: a log line
BenchmarkSystem/open=100-2       	       1	        100.0 offered/s	  12.5 p50_ms	  30.0 p99_ms	  99.9 runs/s
BenchmarkSystem/cost=100-2       	       1	        3.5 weft_cpu_ms/run	  4.25 machine_cpu_ms/run
BenchmarkDBOS/open=300           	       1	        2.5 cpu_ms/run	  1.0 worker_cpu_ms/run
BenchmarkBroken/x-2              	       1	        abc runs/s
PASS
`

// TestParse reads result lines, drops the GOMAXPROCS suffix, skips logs,
// config lines and unparsable lines, and finds rates and CPU per run.
func TestParse(t *testing.T) {
	res, err := benchline.Parse(strings.NewReader(output))
	require.NoError(t, err)
	require.Len(t, res, 4)

	require.Equal(t, "BenchmarkSystem/closed", res[0].Name)
	require.Equal(t, "closed", res[0].Sub())
	require.InDelta(t, 180.5, res[0].Metrics["runs/s"], 1e-9)
	_, ok := res[0].Rate()
	require.False(t, ok)
	_, ok = res[0].CPUPerRun()
	require.False(t, ok)

	rate, ok := res[1].Rate()
	require.True(t, ok)
	require.Equal(t, 100, rate)

	cpu, ok := res[2].CPUPerRun()
	require.True(t, ok)
	require.InDelta(t, 4.25, cpu, 1e-9, "machine CPU is preferred over a process's")

	cpu, ok = res[3].CPUPerRun()
	require.True(t, ok)
	require.InDelta(t, 2.5, cpu, 1e-9, "cpu_ms/run is preferred over any other")
}
