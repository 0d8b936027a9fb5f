package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTable sets two pairs of each side beside each other: medians with
// their range, "-" for a figure one side lacks, a CPU figure from a cost
// row beside the open one, and no line for a figure neither side has.
func TestTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	w1 := write("w1", "BenchmarkSystem/closed-2 1 100 runs/s 1000 ceiling_commits/s\n"+
		"BenchmarkSystem/open=100-2 1 10 p50_ms\nBenchmarkSystem/cost=100-2 1 4 cpu_ms/run\n"+
		"BenchmarkSystemCost/closed-2 1 999 runs/s\n")
	w2 := write("w2", "BenchmarkSystem/closed-2 1 200 runs/s 1000 ceiling_commits/s\nBenchmarkSystem/open=100-2 1 20 p50_ms\n")
	d1 := write("d1", "dbos_queue_poll: 50ms\nBenchmarkDBOS/closed 1 50 runs/s 3 cpu_ms/run\nBenchmarkDBOS/open=300 1 30 p50_ms\n")
	d2 := write("d2", "BenchmarkDBOS/closed 1 70 runs/s 5 cpu_ms/run\n")

	var out bytes.Buffer
	require.NoError(t, run([]string{"-weft", w1 + "," + w2, "-dbos", d1 + "," + d2}, &out))
	lines := map[string][]string{}
	for l := range strings.SplitSeq(out.String(), "\n") {
		if label, cells, ok := strings.Cut(l, "  "); ok {
			lines[strings.TrimSpace(label)] = strings.Fields(cells)
		}
	}
	require.Equal(t, []string{"150", "(100-200)", "60.0", "(50.0-70.0)"}, lines["closed runs/s"])
	require.Equal(t, []string{"-", "4.00", "(3.00-5.00)"}, lines["closed CPU ms/run (machine)"])
	require.Equal(t, []string{"4.00", "-"}, lines["open=100 CPU ms/run (machine)"])
	require.Equal(t, []string{"15.0", "(10.0-20.0)", "-"}, lines["open=100 p50 ms"])
	require.Equal(t, []string{"-", "30.0"}, lines["open=300 p50 ms"])
	require.Equal(t, []string{"0.1500", "(0.1000-0.2000)", "-"}, lines["closed runs per commit"])
	require.NotContains(t, lines, "open=300 runs/s")
}
