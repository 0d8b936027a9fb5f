package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/weftrun/weft/bench/peers/dbos/internal/workload"
)

const (
	// openInFlight bounds the enqueues an open load has waiting for their
	// answer, as Weft's bench bounds its starts.
	openInFlight = 1024
	// endBound bounds the wait for a load's workflows to end.
	endBound = 5 * time.Minute
	// endPoll is how often the wait for the end reads the table; the
	// figures' clocks are DBOS's own timestamps, not this loop's.
	endPoll = 250 * time.Millisecond
)

// loadRun is one load as it ran: the prefix of its workflow ids, how many
// it enqueued, when it began, the rate the enqueues went out at, the p99
// of an enqueue's answer, and the CPU spent until its last workflow ended.
type loadRun struct {
	prefix   string
	n        int
	start    time.Time
	offered  float64
	startP99 time.Duration
	cpu      cpuSpent
}

// id is the workflow id of the load's i-th workflow.
func id(prefix string, i int) string { return fmt.Sprintf("%s-%06d", prefix, i) }

// closed enqueues cfg.runs workflows from cfg.clients clients, each waiting
// for its enqueue's answer (and, with await, for the workflow's result)
// before its next one, and waits until every workflow has ended.
func (r *benchRig) closed(ctx context.Context, prefix string, await bool) (loadRun, error) {
	n := r.cfg.runs
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var (
		answers durations
		wg      sync.WaitGroup
		failed  atomic.Pointer[error]
	)
	before, err := sampleCPU(ctx, r.worker.pid(), r.pool)
	if err != nil {
		return loadRun{}, err
	}
	start := time.Now()
	for range r.cfg.clients {
		wg.Go(func() {
			for i := range next {
				if err := r.enqueue(prefix, i, &answers, await); err != nil {
					failed.Store(&err)
					return
				}
			}
		})
	}
	wg.Wait()
	offered := float64(n) / time.Since(start).Seconds()
	if err := failed.Load(); err != nil {
		return loadRun{}, *err
	}
	return r.finish(ctx, loadRun{prefix: prefix, n: n, start: start, offered: offered, startP99: answers.p99()}, before)
}

// open enqueues rate workflows a second for cfg.openFor, each at its own
// time whatever the answers to the earlier ones, and waits until every
// workflow has ended.
func (r *benchRig) open(ctx context.Context, prefix string, rate int) (loadRun, error) {
	n := rate * int(r.cfg.openFor/time.Second)
	var (
		answers  durations
		wg       sync.WaitGroup
		failed   atomic.Pointer[error]
		inFlight = make(chan struct{}, openInFlight)
	)
	before, err := sampleCPU(ctx, r.worker.pid(), r.pool)
	if err != nil {
		return loadRun{}, err
	}
	start := time.Now()
	for i := range n {
		if failed.Load() != nil {
			break
		}
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		inFlight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inFlight }()
			if err := r.enqueue(prefix, i, &answers, false); err != nil {
				failed.Store(&err)
			}
		})
	}
	offered := float64(n) / time.Since(start).Seconds()
	wg.Wait()
	if err := failed.Load(); err != nil {
		return loadRun{}, *err
	}
	return r.finish(ctx, loadRun{prefix: prefix, n: n, start: start, offered: offered, startP99: answers.p99()}, before)
}

// enqueue enqueues the load's i-th workflow and records the enqueue's
// answer time; with await it then waits for the result and checks it.
func (r *benchRig) enqueue(prefix string, i int, answers *durations, await bool) error {
	in := workload.NewOrder(i)
	t := time.Now()
	h, err := workload.Enqueue(r.client, id(prefix, i), in)
	answers.add(time.Since(t))
	if err != nil || !await {
		return err
	}
	out, err := h.GetResult(dbos.WithHandlePollingInterval(r.cfg.resultPoll), dbos.WithHandleTimeout(endBound))
	if err != nil {
		return fmt.Errorf("result of %s: %w", id(prefix, i), err)
	}
	if out != in {
		return fmt.Errorf("result of %s is %+v, want %+v", id(prefix, i), out, in)
	}
	return nil
}

// finish waits until every workflow of run has ended and records the CPU
// spent since before.
func (r *benchRig) finish(ctx context.Context, run loadRun, before cpuSample) (loadRun, error) {
	if err := r.waitEnded(ctx, run); err != nil {
		return loadRun{}, err
	}
	after, err := sampleCPU(ctx, r.worker.pid(), r.pool)
	if err != nil {
		return loadRun{}, err
	}
	run.cpu = after.since(before)
	return run, nil
}

// waitEnded waits until every workflow of run has left the ENQUEUED and
// PENDING states.
func (r *benchRig) waitEnded(ctx context.Context, run loadRun) error {
	deadline := time.Now().Add(endBound)
	for {
		var ended int
		err := r.pool.QueryRow(ctx, `/* bench */ SELECT count(*) FROM dbos.workflow_status
			WHERE workflow_uuid LIKE $1 AND status NOT IN ('ENQUEUED', 'PENDING', 'DELAYED')`, run.prefix+"-%").Scan(&ended)
		if err != nil {
			return fmt.Errorf("count ended: %w", err)
		}
		if ended >= run.n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d workflows unfinished after %v", run.n-ended, run.n, endBound)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(endPoll):
		}
	}
}

// loadFigures is what a load's line reports.
type loadFigures struct {
	run      loadRun
	rate     float64
	p50, p99 float64
}

// figures reads run's workflows back from DBOS's workflow_status: the rate
// from the first enqueue to the last completion (updated_at), and the
// enqueue-to-completion percentiles (created_at to updated_at, ms). It
// fails unless every workflow succeeded.
func (r *benchRig) figures(ctx context.Context, run loadRun) (loadFigures, error) {
	var (
		ok, total int
		lastMS    int64
		p50, p99  float64
	)
	err := r.pool.QueryRow(ctx, `/* bench */ SELECT count(*) FILTER (WHERE status = 'SUCCESS'), count(*),
			max(updated_at),
			percentile_cont(0.5) WITHIN GROUP (ORDER BY updated_at - created_at),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY updated_at - created_at)
		FROM dbos.workflow_status WHERE workflow_uuid LIKE $1`, run.prefix+"-%").Scan(&ok, &total, &lastMS, &p50, &p99)
	if err != nil {
		return loadFigures{}, fmt.Errorf("read figures: %w", err)
	}
	if ok != run.n || total != run.n {
		return loadFigures{}, fmt.Errorf("%d of %d workflows succeeded (%d recorded)", ok, run.n, total)
	}
	elapsed := time.UnixMilli(lastMS).Sub(run.start)
	if elapsed <= 0 {
		return loadFigures{}, errors.New("last completion before the first enqueue")
	}
	return loadFigures{run: run, rate: float64(run.n) / elapsed.Seconds(), p50: p50, p99: p99}, nil
}

// line is the load's result line: workflows/s as runs/s, the
// latency percentiles, the offered rate, the enqueue answer's p99, CPU per
// workflow (cpu_ms/run: the machine's busy time less this load
// generator's; worker and pg: the worker process's and the database's
// backends'; own: those two summed; loadgen: this process's), and the rate
// against the ceiling.
func (f loadFigures) line(name string, ceiling float64) string {
	n := float64(f.run.n)
	perRun := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	return fmt.Sprintf("%s/%s\t1\t%.1f runs/s\t%.1f p50_ms\t%.1f p99_ms\t%.1f offered/s\t%.2f start_p99_ms"+
		"\t%.3f cpu_ms/run\t%.3f own_cpu_ms/run\t%.3f worker_cpu_ms/run\t%.3f pg_cpu_ms/run\t%.3f loadgen_cpu_ms/run"+
		"\t%.0f ceiling_commits/s\t%.2f ceiling_%%\t%.4f runs/commit\t0 ns/op\n",
		benchName, name, f.rate, f.p50, f.p99, f.run.offered, float64(f.run.startP99.Microseconds())/1000,
		perRun(f.run.cpu.machine), perRun(f.run.cpu.worker+f.run.cpu.postgres), perRun(f.run.cpu.worker),
		perRun(f.run.cpu.postgres), perRun(f.run.cpu.self),
		ceiling, 100*f.rate/ceiling, f.rate/ceiling)
}

// durations collects durations from many goroutines.
type durations struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *durations) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// p99 is the 99th percentile, 0 for none.
func (l *durations) p99() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*0.99))]
}
