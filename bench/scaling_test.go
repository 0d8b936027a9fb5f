package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftrun/weft/pkg/pgboot"
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
// WEFT_BENCH_SCALING_CORES, in order. Per quota it reports runs/s,
// runs/s per core of quota, the topology's CPU per run, the share of
// scheduling periods in which the group spent its quota (throttled_%:
// near 100, the quota is what bounds the rate) and how busy the whole
// machine's CPUs were (at a quota of every core, throttled_% stays low
// and machine_busy_% tells whether the cores were spent). It then fits runs/s to
// cores by least squares and prints the fit and the cores it gives for
// 1,000 runs/s: a fit of measured points, not a measurement on a bigger
// host (a quota cannot exceed the host's cores).
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
	var points [][2]float64
	for _, c := range cores {
		b.Run(fmt.Sprintf("cores=%g", c), func(b *testing.B) {
			if err := lim.set(c); err != nil {
				b.Fatal(err)
			}
			for range b.N {
				rate := s.scaledLoad(b, inst, lim, c, ceiling)
				points = append(points, [2]float64{c, rate})
			}
		})
	}
	if len(points) >= 2 {
		slope, icept := fitLine(points)
		fmt.Printf("    scaling: runs/s = %.1f per core %+.1f over %d quotas; %d runs/s would take %.1f cores at this host's speed (a fit, not a measurement)\n",
			slope, icept, len(points), scalingTarget, (scalingTarget-icept)/slope)
	}
}

// scaledLoad runs the closed load with the group held to cores, reports
// it and returns its runs/s.
func (s *devStack) scaledLoad(b *testing.B, inst *pgboot.Instance, lim *cpuLimit, cores, ceiling float64) float64 {
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
	rate := load.report(b, s, ceiling)
	var used time.Duration
	for p, d := range cpu1 {
		used += d - cpu0[p]
	}
	b.ReportMetric(rate/cores, "runs/s/core")
	b.ReportMetric(ms(used)/float64(n), "cpu_ms/run")
	b.ReportMetric(t1.share(t0), "throttled_%")
	b.ReportMetric(100*float64(busy1-busy0)/float64(elapsed)/float64(runtime.NumCPU()), "machine_busy_%")
	return rate
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

// fitLine is the least-squares line y = slope*x + icept through points.
func fitLine(points [][2]float64) (slope, icept float64) {
	var sx, sy, sxx, sxy float64
	for _, p := range points {
		sx, sy, sxx, sxy = sx+p[0], sy+p[1], sxx+p[0]*p[0], sxy+p[0]*p[1]
	}
	n := float64(len(points))
	slope = (n*sxy - sx*sy) / (n*sxx - sx*sx) // NaN when every x is the same

	return slope, (sy - slope*sx) / n
}
