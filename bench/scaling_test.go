package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftrun/weft/internal/boot/pgboot"
)

// scalingCoresEnv sets the CPU quotas, in cores, BenchmarkSystemScaling
// measures the closed load at, comma-separated (defaultScalingCores
// unless set).
const scalingCoresEnv = "WEFT_BENCH_SCALING_CORES"

const (
	defaultScalingCores = "0.5,1,1.5,2"
	// scalingRunsPerCore is how many runs each quota's closed load starts,
	// per core of it, so that every load lasts about as long.
	scalingRunsPerCore = 1500
	// scalingTarget is the rate, runs/s, which the fit is asked
	// for.
	scalingTarget = 1000
)

// BenchmarkSystemScaling measures what the whole system does with more
// or fewer cores, on one host: the topology (this load generator, weft
// dev, and a private Postgres with its backends) runs in one CPU cgroup,
// and BenchmarkSystem's closed load is measured at each quota of
// WEFT_BENCH_SCALING_CORES, in order. Per quota it reports:
//
//   - runs/s, and runs/s per core of quota;
//   - the topology's CPU per run (its processes' user and system time);
//   - throttled_%, the share of scheduling periods in which the group
//     spent its quota (near 100: the quota bounds the rate; at a quota of
//     every core it stays low, and machine_busy_% says whether the cores
//     were spent);
//   - machine_busy_%, how busy the machine's CPUs were, and runs/s per
//     busy core: the kernel's work outside the group's processes
//     (interrupts, kernel threads) is not charged to its quota, and at a
//     quota of half a core the machine was 0.5 to 0.7 of a core busy.
//
// It then fits runs/s to busy cores, a line through the origin by least
// squares, and prints the busy cores it gives for 1,000 runs/s: a fit of
// measured points, not a measurement on a bigger host (a quota cannot
// exceed the host's cores).
//
// It needs the right to create a CPU cgroup (root on cgroup v1, or a
// cgroup v2 subtree with the cpu controller delegated); without it, it
// is skipped and says why.
func BenchmarkSystemScaling(b *testing.B) {
	cores := scalingCores(b)
	lim, err := newCPULimit()
	if err != nil {
		b.Skipf("BenchmarkSystemScaling needs a CPU cgroup it may create and join (root on cgroup v1, or cgroup v2 with the cpu controller delegated): %v", err)
	}
	b.Cleanup(func() {
		if err := lim.close(); err != nil {
			b.Error(err)
		}
	})
	inst, db := privateDB(b)
	s := startDevStack(b, db)
	ceiling := insertCeiling(b, db, 3*time.Second)
	s.closedLoop(b, systemPlan, systemRuns/3, systemClients) // warm: plans cached, pools full
	var busy, rates []float64
	for _, c := range cores {
		b.Run(fmt.Sprintf("cores=%g", c), func(b *testing.B) {
			if err := lim.set(c); err != nil {
				b.Fatal(err)
			}
			for range b.N {
				rate, busyCores := s.scaledLoad(b, inst, lim, c, ceiling)
				busy, rates = append(busy, busyCores), append(rates, rate)
			}
		})
	}
	if len(rates) > 0 {
		perCore := slopeThroughOrigin(busy, rates)
		fmt.Printf("    scaling: %.1f runs/s per busy core over %d quotas; %d runs/s would keep %.1f cores of this host busy (a fit, not a measurement)\n",
			perCore, len(rates), scalingTarget, scalingTarget/perCore)
	}
}

// scaledLoad runs the closed load with the group held to cores, reports
// it and returns its runs/s and the machine's busy cores meanwhile.
func (s *devStack) scaledLoad(b *testing.B, inst *pgboot.Instance, lim *cpuLimit, cores, ceiling float64) (rate, busyCores float64) {
	n := int(cores * scalingRunsPerCore)
	t0, err := lim.throttle()
	if err != nil {
		b.Fatal(err)
	}
	cpu0, busy0, start := s.cpuByProcess(b, inst), machineBusy(b), time.Now()
	load := s.closedLoop(b, systemPlan, n, systemClients)
	cpu1, busy1, elapsed := s.cpuByProcess(b, inst), machineBusy(b), time.Since(start)
	t1, err := lim.throttle()
	if err != nil {
		b.Fatal(err)
	}
	rate = load.report(b, s, ceiling)
	var used time.Duration
	for p, d := range cpu1 {
		used += d - cpu0[p]
	}
	busyCores = float64(busy1-busy0) / float64(elapsed)
	b.ReportMetric(rate/cores, "runs/s/core")
	b.ReportMetric(rate/busyCores, "runs/s/busy_core")
	b.ReportMetric(ms(used)/float64(n), "cpu_ms/run")
	b.ReportMetric(t1.share(t0), "throttled_%")
	b.ReportMetric(100*busyCores/float64(runtime.NumCPU()), "machine_busy_%")
	return rate, busyCores
}

// scalingCores parses WEFT_BENCH_SCALING_CORES.
func scalingCores(b *testing.B) []float64 {
	v := os.Getenv(scalingCoresEnv)
	if v == "" {
		v = defaultScalingCores
	}
	var out []float64
	for f := range strings.SplitSeq(v, ",") {
		c, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || c < 0.1 {
			b.Fatalf("%s=%q: want CPU quotas in cores, each at least 0.1, comma-separated", scalingCoresEnv, v)
		}
		out = append(out, c)
	}
	return out
}

// slopeThroughOrigin is the least-squares slope of the line y = slope*x
// through the origin and the points (xs[i], ys[i]).
func slopeThroughOrigin(xs, ys []float64) float64 {
	var sxx, sxy float64
	for i, x := range xs {
		sxx, sxy = sxx+x*x, sxy+x*ys[i]
	}
	return sxy / sxx
}
