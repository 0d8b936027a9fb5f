package engine_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/engine"
)

// keyedGate is a plan whose one step waits for the signal "go", under the
// concurrency limit limit (a JSON object).
func keyedGate(t *testing.T, limit string) *plan.Plan {
	t.Helper()
	return parsePlan(t, `{"planId":"keyed","planVersion":"1","concurrency":[`+limit+`],
		"steps":[{"id":"g","kind":"waitSignal","signal":"go"}]}`)
}

// keyConfig serves key queues quickly: a wake another engine wrote is
// read within QueueInterval.
var keyConfig = engine.Config{QueueInterval: 20 * time.Millisecond}

// startKeyed approves a run of p with input and priority.
func (s *stack) startKeyed(t *testing.T, p *plan.Plan, input string, priority int) string {
	t.Helper()
	return s.approve(t, runstart.Request{Plan: validated(t, p), Input: json.RawMessage(input), Priority: priority})
}

// running returns those of runs started and not ended.
func (s *stack) running(t *testing.T, runs []string) []string {
	t.Helper()
	var out []string
	for _, id := range runs {
		evs, err := s.log.EventsFetchAfter(t.Context(), id, 0, 0)
		require.NoError(t, err)
		if slices.ContainsFunc(evs, func(e events.Event) bool { return e.EventType == events.RunStarted }) && terminal(evs) == "" {
			out = append(out, id)
		}
	}
	return out
}

// waitRunningSet waits until exactly want of runs run, and returns them.
func (s *stack) waitRunningSet(t *testing.T, runs []string, want int) []string {
	t.Helper()
	var got []string
	require.Eventually(t, func() bool {
		got = s.running(t, runs)
		return len(got) == want
	}, waitFor, 10*time.Millisecond, "%d of the runs run", want)
	return got
}

// waitAnyRunning waits until one of runs or more run, and returns one.
func (s *stack) waitAnyRunning(t *testing.T, runs []string) string {
	t.Helper()
	var got []string
	require.Eventually(t, func() bool {
		got = s.running(t, runs)
		return len(got) > 0
	}, waitFor, 10*time.Millisecond, "one of the runs runs")
	return got[0]
}

// finish signals run to end and waits for its completion.
func (s *stack) finish(t *testing.T, run string) {
	t.Helper()
	s.signal(t, run, "go", "go-"+run, `{}`)
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, run)))
}

// finishInTurn lets runs, which run one at a time, end each in turn, and
// returns the name each had in names, in the order they ran.
func (s *stack) finishInTurn(t *testing.T, runs []string, names map[string]string) []string {
	t.Helper()
	var order []string
	for range runs {
		r := s.waitRunningSet(t, runs, 1)[0]
		order = append(order, names[r])
		s.finish(t, r)
	}
	return order
}

// queuedData returns run's RunQueued payload.
func (s *stack) queuedData(t *testing.T, run string) events.RunQueuedData {
	t.Helper()
	var d events.RunQueuedData
	for _, e := range s.waitEvent(t, run, events.RunQueued) {
		if e.EventType == events.RunQueued {
			require.NoError(t, e.Data(&d))
		}
	}
	return d
}

// A limit of 2 per customer: a third run of one customer waits, with a
// reason that names its key, while another customer's run starts; it
// starts when one of the two ends. Two engines serve the key's queue.
func TestConcurrencyQueueHoldsEachKeyToItsLimit(t *testing.T) {
	t.Parallel()
	s := setup(t, keyConfig)
	s.runEngine(t, keyConfig)
	p := keyedGate(t, `{"key":"input.customerId","limit":2}`)
	a := []string{s.startKeyed(t, p, `{"customerId":"a"}`, 0), s.startKeyed(t, p, `{"customerId":"a"}`, 0)}
	s.waitRunningSet(t, a, 2)
	third := s.startKeyed(t, p, `{"customerId":"a"}`, 0)
	b := s.startKeyed(t, p, `{"customerId":"b"}`, 0)
	s.waitRunningSet(t, []string{b}, 1)

	hold := s.queuedData(t, third)
	require.Equal(t, `input.customerId = "a"`, hold.Key)
	require.Equal(t, 2, hold.Running)
	require.Equal(t, 2, hold.Limit)
	require.Equal(t, `2 of 2 running for input.customerId = "a"`, hold.Reason)
	require.Empty(t, s.running(t, []string{third}), "the third run of a waits")

	s.finish(t, a[0])
	require.ElementsMatch(t, []string{a[1], third}, s.waitRunningSet(t, append(a, third), 2))
	for _, id := range []string{a[1], third, b} {
		s.finish(t, id)
	}
	s.requireNoSlotsHeld(t)
}

// requireNoSlotsHeld asserts that every run's slots and wakes are gone
// once every run has ended: none leaked.
func (s *stack) requireNoSlotsHeld(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		var held, waiting, wakes int
		err := s.db.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM engine_run_keys),
			(SELECT count(*) FROM engine_runs WHERE key_slot IS NOT NULL), (SELECT count(*) FROM engine_key_wakes)`).Scan(&held, &waiting, &wakes)
		return err == nil && held == 0 && waiting == 0 && wakes == 0
	}, waitFor, 10*time.Millisecond, "no slot held, no run waiting, no wake left")
}

// A key's limit and its environment's hold runs together: a run waits for
// whichever it finds full first; the environment's queue does not wait
// for a run held by its key, and that run starts once both have room. No
// place is left over.
func TestConcurrencyUnderAnEnvironmentLimit(t *testing.T) {
	t.Parallel()
	cfg := keyConfig
	cfg.Admission = admission.Limits{PerEnvironment: map[string]admission.Limit{"e": {MaxConcurrentRuns: 2, Policy: admission.Queue}}}
	s := setup(t, cfg)
	p := keyedGate(t, `{"key":"input.customerId","limit":1}`)
	start := func(customer string) string {
		return s.approve(t, runstart.Request{Plan: validated(t, p), EnvironmentID: "e", Input: json.RawMessage(`{"customerId":"` + customer + `"}`)})
	}
	a1 := start("a")
	s.waitRunningSet(t, []string{a1}, 1)
	a2 := start("a")
	require.NotEmpty(t, s.queuedData(t, a2).Key, "a2 waits on its key")
	b1 := start("b")
	s.waitRunningSet(t, []string{b1}, 1)
	c1 := start("c")
	require.Empty(t, s.queuedData(t, c1).Key, "c1 waits on its environment")

	s.finish(t, b1)
	s.waitRunningSet(t, []string{c1}, 1)
	require.Empty(t, s.running(t, []string{a2}), "a2 still waits on its key")
	s.finish(t, a1)
	s.waitRunningSet(t, []string{a2}, 1)
	s.finish(t, a2)
	s.finish(t, c1)
	s.requireNoSlotsHeld(t)
}

// A limit an expression gives: a premium customer runs two at once, any
// other one.
func TestConcurrencyDynamicLimit(t *testing.T) {
	t.Parallel()
	s := setup(t, keyConfig)
	p := keyedGate(t, `{"key":"input.customerId","limit":"input.tier == 'premium' ? 2 : 1"}`)
	var premium, basic []string
	for range 3 {
		premium = append(premium, s.startKeyed(t, p, `{"customerId":"p","tier":"premium"}`, 0))
		basic = append(basic, s.startKeyed(t, p, `{"customerId":"q","tier":"basic"}`, 0))
	}
	for group, limit := range map[*[]string]int{&premium: 2, &basic: 1} {
		running := s.waitRunningSet(t, *group, limit)
		for _, id := range *group {
			if !slices.Contains(running, id) {
				require.Equal(t, limit, s.queuedData(t, id).Limit)
			}
		}
	}
	for _, group := range [][]string{premium, basic} {
		for range group {
			s.finish(t, s.waitAnyRunning(t, group))
		}
	}
	s.requireNoSlotsHeld(t)
}

// CANCEL_NEWEST cancels the run that finds its key full, and the running
// one goes on; CANCEL_OLDEST cancels the key's oldest run to make room,
// and the new run starts once it has ended. The cancelled run's reason
// names its strategy.
func TestConcurrencyCancelStrategies(t *testing.T) {
	t.Parallel()
	for _, strategy := range []plan.ConcurrencyStrategy{plan.StrategyCancelNewest, plan.StrategyCancelOldest} {
		t.Run(string(strategy), func(t *testing.T) {
			t.Parallel()
			s := setup(t, keyConfig)
			p := keyedGate(t, `{"key":"input.id","limit":1,"strategy":"`+string(strategy)+`"}`)
			first := s.startKeyed(t, p, `{"id":"x"}`, 0)
			s.waitRunningSet(t, []string{first}, 1)
			second := s.startKeyed(t, p, `{"id":"x"}`, 0)
			cancelled, kept := second, first
			if strategy == plan.StrategyCancelOldest {
				cancelled, kept = first, second
			}
			evs := s.waitTerminal(t, cancelled)
			require.Equal(t, events.RunCancelled, terminal(evs))
			var d events.RunCancelledData
			require.NoError(t, evs[slices.IndexFunc(evs, func(e events.Event) bool { return e.EventType == events.RunCancelled })].Data(&d))
			require.Contains(t, d.Reason, string(strategy))
			if strategy == plan.StrategyCancelNewest {
				require.False(t, slices.ContainsFunc(evs, func(e events.Event) bool { return e.EventType == events.RunStarted }), "never started")
			}
			s.waitRunningSet(t, []string{kept}, 1)
			s.finish(t, kept)
			s.requireNoSlotsHeld(t)
		})
	}
}

// GROUP_ROUND_ROBIN shares one place across every tenant and takes the
// queued tenants in turn: a's backlog does not hold b's and c's runs
// back.
func TestConcurrencyGroupRoundRobin(t *testing.T) {
	t.Parallel()
	s := setup(t, keyConfig)
	p := keyedGate(t, `{"key":"input.tenant","limit":1,"strategy":"GROUP_ROUND_ROBIN"}`)
	byID := map[string]string{}
	var runs []string
	for _, tenant := range []string{"a", "a", "a", "b", "b", "c"} {
		id := s.startKeyed(t, p, fmt.Sprintf(`{"tenant":%q}`, tenant), 0)
		byID[id] = tenant
		runs = append(runs, id)
		if len(runs) == 1 {
			s.waitRunningSet(t, runs, 1)
		}
	}
	for _, id := range runs[1:] {
		s.queuedData(t, id)
	}
	require.Equal(t, []string{"a", "b", "c", "a", "b", "a"}, s.finishInTurn(t, runs, byID))
	s.requireNoSlotsHeld(t)
}

// Queued runs start higher priorities first, first come, first served
// within one.
func TestConcurrencyPriorityOrder(t *testing.T) {
	t.Parallel()
	s := setup(t, keyConfig)
	p := keyedGate(t, `{"key":"'all'","limit":1}`)
	head := s.startKeyed(t, p, `{}`, 0)
	s.waitRunningSet(t, []string{head}, 1)
	names := map[string]string{}
	runs := []string{head}
	for _, q := range []struct {
		name     string
		priority int
	}{{"p3", 3}, {"p5-first", 5}, {"p1", 1}, {"p5-second", 5}, {"default", 0}} {
		id := s.startKeyed(t, p, `{}`, q.priority)
		names[id] = q.name
		runs = append(runs, id)
		s.queuedData(t, id)
	}
	s.finish(t, head)
	require.Equal(t, []string{"p5-first", "p5-second", "p3", "default", "p1"}, s.finishInTurn(t, runs[1:], names))
	s.requireNoSlotsHeld(t)
}

// An engine dies holding an admission: before the commit of the n-th
// round or batch that writes, or after it, for several n, so the crash
// lands on a start that takes the key's one place, on a run's end that
// gives it back and wakes its queue, and on a queued run's start. A
// fresh engine then drives every run to its end: each started once, none
// while another held the place, and no place or wake is left over.
func TestConcurrencyEngineCrashes(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"before-commit", "after-commit"} {
		for _, n := range []int{1, 3, 6} {
			t.Run(fmt.Sprintf("%s/%d", point, n), func(t *testing.T) {
				t.Parallel()
				testConcurrencyCrash(t, point, n)
			})
		}
	}
}

func testConcurrencyCrash(t *testing.T, point string, n int) {
	s := newStack(t)
	rawWorker(t, s.js, "default", echo)
	p := parsePlan(t, `{"planId":"keyed-crash","planVersion":"1","concurrency":[{"key":"'all'","limit":1}],
		"steps":[{"id":"a","activity":"echo"},{"id":"b","activity":"echo","dependsOn":["a"]}]}`)
	var runs []string
	for range 3 {
		runs = append(runs, s.startKeyed(t, p, `{}`, 0))
	}
	runCrashChild(t, s, point, n)

	cfg := crashConfig
	cfg.QueueInterval = 20 * time.Millisecond
	s.runEngine(t, cfg)
	started := map[string]time.Time{}
	for _, id := range runs {
		evs := s.waitTerminal(t, id)
		require.Equal(t, events.RunCompleted, terminal(evs))
		requireOncePerAttempt(t, evs)
		for _, e := range evs {
			if e.EventType == events.RunStarted {
				started[id] = e.PersistedAt
			}
		}
	}
	slices.SortFunc(runs, func(a, b string) int { return started[a].Compare(started[b]) })
	requireNeverConcurrent(t, s, runs)
	s.requireNoSlotsHeld(t)
}

// Fair admission: one tenant's backlog does not hold another's run back
// by more than one turn, and a weight gives a group that many starts per
// visit. Under one place for every run of the plan, the tenant "noisy"
// queues 20 runs behind its own running one, then "quiet" queues one:
// quiet's starts next. With weights (gold 2, silver 1), the queue visits
// the groups in turn, two gold runs per visit.
func TestConcurrencyFairness(t *testing.T) {
	t.Parallel()
	s := setup(t, keyConfig)
	t.Run("noisy tenant", func(t *testing.T) {
		p := keyedGate(t, `{"key":"'all'","limit":1}`)
		start := func(tenant string) string {
			return s.approve(t, runstart.Request{TenantID: tenant, Plan: validated(t, p), Input: json.RawMessage(`{}`)})
		}
		head := start("noisy")
		s.waitRunningSet(t, []string{head}, 1)
		var backlog []string
		for range 20 {
			backlog = append(backlog, start("noisy"))
		}
		s.queuedData(t, backlog[len(backlog)-1])
		quiet := start("quiet")
		s.queuedData(t, quiet)
		s.finish(t, head)
		all := append([]string{quiet}, backlog...)
		require.Equal(t, quiet, s.waitRunningSet(t, all, 1)[0], "quiet's run starts within one turn")
		for range all {
			s.finish(t, s.waitRunningSet(t, all, 1)[0])
		}
	})
	t.Run("weights", func(t *testing.T) {
		p := parsePlan(t, `{"planId":"weighted","planVersion":"1","concurrency":[{"key":"'all'","limit":1}],
			"fairness":{"key":"input.tier","weight":"input.tier == 'gold' ? 2 : 1"},
			"steps":[{"id":"g","kind":"waitSignal","signal":"go"}]}`)
		tier := map[string]string{}
		start := func(t *testing.T, tr string) string {
			id := s.startKeyed(t, p, `{"tier":"`+tr+`"}`, 0)
			tier[id] = tr
			return id
		}
		head := start(t, "zinc")
		s.waitRunningSet(t, []string{head}, 1)
		runs := []string{}
		for range 4 {
			runs = append(runs, start(t, "gold"), start(t, "silver"))
		}
		s.queuedData(t, runs[len(runs)-1])
		s.finish(t, head)
		require.Equal(t, []string{"gold", "gold", "silver", "gold", "gold", "silver", "silver", "silver"}, s.finishInTurn(t, runs, tier))
	})
	s.requireNoSlotsHeld(t)
}

// Runs waiting on a key are left to its wake: the sweep, which re-drives
// every other still run once per StallAfter, never visits them while they
// wait, while it visits the run that holds the key again and again.
func TestConcurrencyQueuedRunsAreNotSwept(t *testing.T) {
	t.Parallel()
	cfg := keyConfig
	cfg.SweepInterval, cfg.StallAfter = 20*time.Millisecond, engine.MinStallAfter
	s := setup(t, cfg)
	p := keyedGate(t, `{"key":"'all'","limit":1}`)
	holder := s.startKeyed(t, p, `{}`, 0)
	s.waitRunningSet(t, []string{holder}, 1)
	var queued []string
	for range 3 {
		queued = append(queued, s.startKeyed(t, p, `{}`, 0))
	}
	for _, id := range queued {
		s.queuedData(t, id)
	}
	// A run may be swept before it is queued (its start round came late);
	// none is once it waits.
	sweptAt := func() map[string]time.Time {
		rows, err := s.db.Pool.Query(t.Context(), `SELECT run_id::text, coalesce(swept_at, 'epoch') FROM engine_runs`)
		require.NoError(t, err)
		out := map[string]time.Time{}
		var id string
		var at time.Time
		_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error { out[id] = at; return nil })
		require.NoError(t, err)
		return out
	}
	before := sweptAt()
	last := before[holder]
	for range 2 { // two of the holder's sweeps: the queued runs have been still for longer than StallAfter meanwhile
		require.Eventually(t, func() bool {
			at := sweptAt()[holder]
			if at.After(last) {
				last = at
				return true
			}
			return false
		}, waitFor, 10*time.Millisecond, "the sweep visits the holder")
	}
	after := sweptAt()
	for _, id := range queued {
		require.Equal(t, before[id], after[id], "queued run %s was swept while it waited", id)
	}
	s.finish(t, holder)
	for range queued {
		s.finish(t, s.waitAnyRunning(t, queued))
	}
	s.requireNoSlotsHeld(t)
}

// The limits' metrics: starts admitted, runs queued, their wait, the
// runs a CANCEL_NEWEST limit cancelled, by plan and limit; and the depth
// of the key's queue by key value.
func TestConcurrencyMetrics(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	cfg := keyConfig
	cfg.MeterProvider = mp
	s := setup(t, cfg)
	p := keyedGate(t, `{"key":"input.customerId","limit":1}`)
	first := s.startKeyed(t, p, `{"customerId":"a"}`, 0)
	s.waitRunningSet(t, []string{first}, 1)
	second := s.startKeyed(t, p, `{"customerId":"a"}`, 0)
	s.queuedData(t, second)
	limit := map[string]string{"plan": "keyed", "limit": "0: input.customerId"}
	// A round's admissions are counted once its batch has committed, a
	// moment after its events can be read: wait for the counts too.
	sc := metricstest.WaitFor(t, h, waitFor, func(sc metricstest.Scrape) bool {
		depth, _ := sc.Sum("weft_admission_key_depth", map[string]string{"key": "keyed 0 a"})
		queued, _ := sc.Sum("weft_admission_key_queued_total", limit)
		return depth == 1 && queued == 1
	})
	require.Equal(t, int64(1), sc.Count(t, "weft_admission_key_admitted_total", limit))

	s.finish(t, first)
	s.waitRunningSet(t, []string{second}, 1)
	sc = metricstest.WaitFor(t, h, waitFor, func(sc metricstest.Scrape) bool {
		n, _ := sc.Sum("weft_admission_key_wait_seconds_count", limit)
		return n == 1
	})
	require.Equal(t, int64(2), sc.Count(t, "weft_admission_key_admitted_total", limit))
	require.Positive(t, sc.Value(t, "weft_admission_key_wait_seconds_sum", limit))
	s.finish(t, second)

	newest := keyedGate(t, `{"key":"'one'","limit":1,"strategy":"CANCEL_NEWEST"}`)
	held := s.startKeyed(t, newest, `{}`, 0)
	s.waitRunningSet(t, []string{held}, 1)
	require.Equal(t, events.RunCancelled, terminal(s.waitTerminal(t, s.startKeyed(t, newest, `{}`, 0))))
	metricstest.WaitFor(t, h, waitFor, func(sc metricstest.Scrape) bool {
		n, _ := sc.Sum("weft_admission_key_cancelled_total", map[string]string{"plan": "keyed", "limit": "0: 'one'"})
		return n == 1
	})
	s.finish(t, held)
}
