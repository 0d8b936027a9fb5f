package bench

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// latencies collects durations from many goroutines and reports percentiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) percentile(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// report adds the throughput and, when latencies were collected, p50/p99 in
// milliseconds to the benchmark's output line.
func report(b *testing.B, n int, elapsed time.Duration, unit string, l *latencies) {
	b.ReportMetric(float64(n)/elapsed.Seconds(), unit)
	if l != nil {
		b.ReportMetric(float64(l.percentile(0.50).Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(l.percentile(0.99).Microseconds())/1000, "p99_ms")
	}
	b.ReportMetric(0, "ns/op") // throughput, not per-op time, is the figure here
}

// parallel runs fn n times in total over the given number of goroutines and
// returns the wall time.
func parallel(b *testing.B, goroutines, n int, fn func(worker, i int) error) time.Duration {
	b.Helper()
	var (
		wg   sync.WaitGroup
		next = make(chan int, n)
		errs = make(chan error, goroutines)
	)
	for i := range n {
		next <- i
	}
	close(next)
	start := time.Now()
	for w := range goroutines {
		wg.Go(func() {
			for i := range next {
				if err := fn(w, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return elapsed
}
