package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/engine"
	"github.com/weftrun/weft/services/engine/internal/partition"
)

// partitionedConfig is the engines' config in the partition tests: the
// shortest lease, so partitions move quickly.
var partitionedConfig = engine.Config{PartitionLease: engine.MinPartitionLease, AckWait: 5 * time.Second}

// metered is an engine of a test, its metrics served by h.
type metered struct {
	h    http.Handler
	stop func()
}

// startMetered starts an engine with its own metrics; stop stops it (it
// leaves the membership) and is also run when the test ends.
func (s *stack) startMetered(t *testing.T, cfg engine.Config) *metered {
	t.Helper()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	cfg.MeterProvider, cfg.TaskKeys = mp, testTaskKeys
	eng, err := engine.New(s.db.Pool, s.bus.Conn(t), cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	var once sync.Once
	m := &metered{h: h, stop: func() {
		once.Do(func() { cancel(); require.NoError(t, <-done) })
	}}
	t.Cleanup(m.stop)
	return m
}

// held is how many partitions the engine holds; conflicts how many
// compare-and-swap conflicts its rounds absorbed.
func (m *metered) held(t *testing.T) int {
	v, _ := metricstest.Get(t, m.h).Sum("weft_engine_partitions_held", nil)
	return int(v)
}

func (m *metered) conflicts(t *testing.T) int {
	v, _ := metricstest.Get(t, m.h).Sum("weft_engine_round_conflicts_total", nil)
	return int(v)
}

// waitDivided waits until engines hold every partition between them, each
// some.
func waitDivided(t *testing.T, engines ...*metered) {
	t.Helper()
	require.Eventually(t, func() bool {
		total := 0
		for _, e := range engines {
			n := e.held(t)
			if n == 0 {
				return false
			}
			total += n
		}
		return total == streams.DefaultPartitions
	}, waitFor, 20*time.Millisecond, "%d engines divide the partitions", len(engines))
}

var linear3 = `{"planId":"l3","planVersion":"1","steps":[
	{"id":"a","activity":"echo"},
	{"id":"b","activity":"echo","dependsOn":["a"]},
	{"id":"c","activity":"echo","dependsOn":["b"]}]}`

// startRuns starts n runs of p and returns their ids.
func (s *stack) startRuns(t *testing.T, p *plan.Plan, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.start(t, p)
	}
	return ids
}

func (s *stack) requireCompleted(t *testing.T, runIDs []string) {
	t.Helper()
	for _, id := range runIDs {
		require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, id)), "run %s", id)
	}
}

// Three engines divide the partitions and the runs; in steady state their
// rounds do not race (the conflict counter stays near zero, where engines
// sharing one consumer conflicted on every run whose messages came close
// together). One engine stopping hands its partitions to the others, one
// joining takes a share, and the runs started meanwhile complete.
func TestEnginesDivideThePartitions(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	rawWorker(t, s.js, "default", echo)
	a, b, c := s.startMetered(t, partitionedConfig), s.startMetered(t, partitionedConfig), s.startMetered(t, partitionedConfig)
	waitDivided(t, a, b, c)

	p := parsePlan(t, linear3)
	s.requireCompleted(t, s.startRuns(t, p, 100))
	conflicts := a.conflicts(t) + b.conflicts(t) + c.conflicts(t)
	t.Logf("steady state, 3 engines, 100 runs of 3 steps: %d conflicts", conflicts)
	require.LessOrEqual(t, conflicts, 2, "one engine drives each run")

	during := s.startRuns(t, p, 30)
	a.stop()
	waitDivided(t, b, c)
	d := s.startMetered(t, partitionedConfig)
	waitDivided(t, b, c, d)
	s.requireCompleted(t, append(during, s.startRuns(t, p, 30)...))
	t.Logf("after a stop and a join: %d conflicts in all", b.conflicts(t)+c.conflicts(t)+d.conflicts(t)+conflicts)
}

// PAUSE then RESUME over 200 runs with 3 engines leaves no run stuck:
// each run's signals apply in order on the engine holding its partition.
func TestPauseResumeOverManyRunsWithThreeEngines(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	rawWorker(t, s.js, "default", echo)
	engines := []*metered{s.startMetered(t, partitionedConfig), s.startMetered(t, partitionedConfig), s.startMetered(t, partitionedConfig)}
	waitDivided(t, engines...)

	// Each run waits for "go" at its gate, so it is running when the
	// PAUSE and the RESUME come, and both apply.
	ids := s.startRuns(t, parsePlan(t, `{"planId":"pr","planVersion":"1","steps":[
		{"id":"gate","kind":"waitSignal","signal":"go"},
		{"id":"a","activity":"echo","dependsOn":["gate"]},
		{"id":"b","activity":"echo","dependsOn":["a"]}]}`), 200)
	for i, id := range ids {
		s.signal(t, id, plan.SignalPause, fmt.Sprintf("pause-%d", i), `{}`)
		s.signal(t, id, plan.SignalResume, fmt.Sprintf("resume-%d", i), `{}`)
		s.signal(t, id, "go", fmt.Sprintf("go-%d", i), `{}`)
	}
	s.requireCompleted(t, ids)
	for i, id := range ids {
		for _, sig := range []string{"pause", "resume", "go"} {
			require.Equal(t, events.SignalOutcomeApplied, s.waitApplied(t, id, fmt.Sprintf("%s-%d", sig, i)).Outcome, "run %s: %s", id, sig)
		}
	}
}

// An engine process killed with SIGKILL neither leaves the membership nor
// releases its partitions: the others take them once its lease ran out
// and its consumers' pins lapsed, and the runs of those partitions
// complete. The test reports how long they waited.
func TestKilledEnginesPartitionsMove(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	rawWorker(t, s.js, "default", echo)
	procs := make([]*exec.Cmd, 3)
	for i := range procs {
		procs[i] = s.serveChild(t)
	}
	members := s.waitMembers(t, 3)
	p := parsePlan(t, linear3)
	s.requireCompleted(t, s.startRuns(t, p, 30))

	victim := procs[0]
	var victimID string
	for _, id := range members {
		if strings.Contains(id, fmt.Sprintf("-%d-", victim.Process.Pid)) {
			victimID = id
		}
	}
	require.NotEmpty(t, victimID, "the victim's membership row, of %v", members)
	orphaned := partition.Assign(members, victimID, streams.DefaultPartitions)
	require.NotEmpty(t, orphaned)

	require.NoError(t, victim.Process.Kill())
	killed := time.Now()
	runs := s.startRuns(t, p, 60)
	var waited time.Duration
	orphans := 0
	for _, id := range runs {
		require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, id)), "run %s", id)
		if slices.Contains(orphaned, streams.PartitionOf(id, streams.DefaultPartitions)) {
			orphans++
			waited = max(waited, time.Since(killed))
		}
	}
	t.Logf("engine killed; %d of 60 runs were in its %d partitions; the last completed %v after the kill (lease %v)",
		orphans, len(orphaned), waited.Round(10*time.Millisecond), partitionedConfig.PartitionLease)
	require.Len(t, s.waitMembers(t, 2), 2, "the killed engine's lease ran out")
}

// serveChild starts an engine child process (crashChild at "serve"),
// killed when the test ends.
func (s *stack) serveChild(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+s.db.URL, childNATSEnv+"="+s.nats.URL(), childCrashEnv+"=serve:0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// waitMembers waits until the membership holds n live engines and
// returns their ids.
func (s *stack) waitMembers(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	require.Eventually(t, func() bool {
		rows, err := s.db.Pool.Query(t.Context(), `SELECT engine_id FROM engine_members WHERE heartbeat_at >= now() - $1::interval`,
			partitionedConfig.PartitionLease)
		require.NoError(t, err)
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return len(ids) == n
	}, waitFor, 20*time.Millisecond, "%d engines are members", n)
	return ids
}
