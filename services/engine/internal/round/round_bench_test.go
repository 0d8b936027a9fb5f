package round_test

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// echoPlan is the headline benchmark's plan (bench/system_test.go's
// systemPlan): three echo steps in a line, each one's input an
// expression of the one before's output.
const echoPlan = `{"planId":"system3","planVersion":"1","steps":[
	{"id":"a","activity":"echo","input":{"order":"${{ input }}"}},
	{"id":"b","activity":"echo","dependsOn":["a"],"input":{"from_a":"${{ steps.a.output }}"}},
	{"id":"c","activity":"echo","dependsOn":["b"],"input":{"from_b":"${{ steps.b.output }}"}}],
	"output":"${{ steps.c.output }}"}`

// echoRounds is how many rounds a run of echoPlan takes when its worker
// reports only results (an echo ends before it would report StepStarted):
// the start, and each step's completion.
const echoRounds = 4

// echoRuns approves n runs of echoPlan, in one transaction per 100, and
// returns their ids.
func echoRuns(tb testing.TB, pool *pgxpool.Pool, n int) []string {
	tb.Helper()
	v, err := plan.ParseValidated([]byte(echoPlan), plan.Limits{})
	require.NoError(tb, err)
	approver := runstart.Approver{Journal: journal.New(eventlog.New(pool))}
	ids := make([]string, 0, n)
	for len(ids) < n {
		reqs := make([]runstart.Request, min(100, n-len(ids)))
		for i := range reqs {
			reqs[i] = runstart.Request{EnvironmentID: "env", Plan: v,
				Input: json.RawMessage(`{"orderId":"o-1234","amount":42,"currency":"EUR"}`)}
		}
		err := pgx.BeginFunc(tb.Context(), pool, func(tx pgx.Tx) error {
			got, err := approver.ApproveAllTx(tb.Context(), tx, reqs)
			ids = append(ids, got...)
			return err
		})
		require.NoError(tb, err)
	}
	return ids
}

// echoRun drives one run of echoPlan as the engine and an echo worker
// would: the start, then the completion of each task the rounds dispatch,
// its output the task's input.
type echoRun struct {
	id   string
	next []decide.Task // the tasks dispatched and not yet completed
}

// input returns the run's next round, or false when it has ended.
func (r *echoRun) input(started bool) (decide.Input, bool) {
	now := time.Now().UTC()
	if !started {
		return decide.RunApproved{Now: now}, true
	}
	if len(r.next) == 0 {
		return nil, false
	}
	t := r.next[0]
	r.next = r.next[1:]
	return decide.ResultCompleted{StepID: t.StepID, LogicalAttempt: t.LogicalAttempt, EngineAttemptID: "1",
		WorkerID: "w", Output: t.Input, Now: now}, true
}

// BenchmarkEchoRounds is the cost of one round of a three-step echo run
// (echoPlan) against Postgres: each op is one round, the runs' starts and
// completions in the order the engine sees them, so ns/op and allocs/op
// average the four rounds of a run (divide nothing: multiply by
// echoRounds for a run). batch is how many runs' rounds go in one
// RunBatch (1 at low load; more when the engine's consumer has a
// backlog); cold runs every round without the Runner's warm states, as an
// engine that just took over the runs would.
func BenchmarkEchoRounds(b *testing.B) {
	for _, c := range []struct {
		batch int
		cold  bool
	}{{1, false}, {16, false}, {1, true}} {
		b.Run(fmt.Sprintf("batch=%d/cold=%t", c.batch, c.cold), func(b *testing.B) {
			benchEchoRounds(b, c.batch, c.cold)
		})
	}
}

func benchEchoRounds(b *testing.B, batch int, cold bool) {
	db := weftest.NewDB(b)
	cfg := round.Config{}
	if cold {
		cfg.WarmRuns = -1
	}
	x := newRunner(db.Pool, cfg)
	ids := echoRuns(b, db.Pool, (b.N+echoRounds-1)/echoRounds+batch)
	runs := make([]*echoRun, len(ids))
	for i, id := range ids {
		runs[i] = &echoRun{id: id}
	}
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	done := 0
	for next := 0; done < b.N; {
		group := runs[next:min(next+batch, len(runs))]
		next += len(group)
		for step := 0; done < b.N; step++ {
			rounds := make([]round.Round, 0, len(group))
			of := make([]*echoRun, 0, len(group))
			for _, r := range group {
				if in, ok := r.input(step > 0); ok {
					rounds = append(rounds, round.Round{RunID: r.id, Input: in})
					of = append(of, r)
				}
			}
			if len(rounds) == 0 {
				break
			}
			results, err := x.RunBatch(ctx, rounds)
			if err != nil {
				b.Fatal(err)
			}
			for i, res := range results {
				if res.Err != nil {
					b.Fatal(res.Err)
				}
				of[i].next = append(of[i].next, res.Decision.Tasks...)
			}
			done += len(rounds)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/round")
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(done), "cpu-ns/round")
}

// processCPU is the CPU time, user and system, this process has used so
// far: the Go side of a round (pgx and the collector included), which a
// round's wall time, mostly spent waiting for Postgres, hides.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
