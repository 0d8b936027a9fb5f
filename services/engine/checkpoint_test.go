package engine_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// noCAS is a store that does not report conditionalBatch.
type noCAS struct{}

func (noCAS) Capabilities() eventlog.Capabilities {
	return eventlog.Capabilities{AtomicBatch: true, ReadAfterWrite: true, ScanConsistency: true}
}

// A cas-required engine whose store lacks conditionalBatch fails in New,
// before it claims any work: no durable consumer exists afterwards, so
// no message was taken. The error names the capability, the mode and the
// store. Single-owner needs no such capability.
func TestCASRequiredNeedsConditionalBatch(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	runID := s.start(t, parsePlan(t, `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`))

	_, err := engine.New(s.db.Pool, s.nats.Conn(t), engine.Config{
		CheckpointOwnership: engine.CASRequired, StoreCapabilities: noCAS{}})
	var capErr *engine.CheckpointOwnershipCapabilityError
	require.ErrorAs(t, err, &capErr)
	require.Equal(t, engine.CheckpointOwnershipCapabilityError{
		Capability: "conditionalBatch", Mode: engine.CASRequired, Store: "engine_test.noCAS"}, *capErr)
	for _, name := range []string{"conditionalBatch", "cas-required", "engine_test.noCAS"} {
		require.Contains(t, err.Error(), name)
	}
	for stream, durable := range map[string]string{
		streams.EventsStream:  engine.PartitionConsumer(streams.EventsStream, 0),
		streams.ResultsStream: engine.PartitionConsumer(streams.ResultsStream, 0)} {
		_, err := s.js.Consumer(t.Context(), stream, durable)
		require.ErrorIs(t, err, jetstream.ErrConsumerNotFound, "no consumer of %s was created", stream)
	}
	evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []events.Type{events.RunApproved}, types(evs), "the run was not touched")

	_, err = engine.New(s.db.Pool, s.nats.Conn(t), engine.Config{StoreCapabilities: noCAS{}})
	require.NoError(t, err, "single-owner (the default) needs no conditionalBatch")
	_, err = engine.New(s.db.Pool, s.nats.Conn(t), engine.Config{CheckpointOwnership: engine.CASRequired})
	require.NoError(t, err, "the Postgres event log has conditionalBatch")
	_, err = engine.New(s.db.Pool, s.nats.Conn(t), engine.Config{CheckpointOwnership: "multi-owner"})
	require.ErrorContains(t, err, `"multi-owner"`)
	require.NotErrorAs(t, err, &capErr)
}

// chainsPlan returns a plan of chains independent chains of n activity
// steps each, every step after the previous one of its chain.
func chainsPlan(t *testing.T, chains, n int) *plan.Plan {
	t.Helper()
	p := &plan.Plan{PlanID: "long", PlanVersion: "1"}
	for c := range chains {
		for i := range n {
			s := plan.Step{ID: fmt.Sprintf("c%02d-s%03d", c, i), Activity: "echo"}
			if i > 0 {
				s.DependsOn = []string{p.Steps[len(p.Steps)-1].ID}
			}
			p.Steps = append(p.Steps, s)
		}
	}
	require.NoError(t, p.Validate(plan.Limits{}))
	return p
}

// auditCheckpoints records every checkpoint any engine writes, in
// test_checkpoints, by a trigger on run_checkpoints.
func auditCheckpoints(t *testing.T, s *stack) {
	t.Helper()
	_, err := s.db.Pool.Exec(t.Context(), `
		CREATE TABLE test_checkpoints AS SELECT * FROM run_checkpoints WITH NO DATA;
		CREATE FUNCTION test_checkpoint_audit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO test_checkpoints SELECT NEW.*; RETURN NEW; END $$;
		CREATE TRIGGER test_checkpoint_audit AFTER INSERT OR UPDATE ON run_checkpoints
			FOR EACH ROW EXECUTE FUNCTION test_checkpoint_audit();`)
	require.NoError(t, err)
}

// auditedCheckpoint is one row of test_checkpoints.
type auditedCheckpoint struct {
	version, covered int64
	state            []byte
}

func auditedCheckpoints(t *testing.T, s *stack, runID string) []auditedCheckpoint {
	t.Helper()
	rows, err := s.db.Pool.Query(t.Context(), `
		SELECT checkpoint_version, covered_seq, state FROM test_checkpoints
		WHERE run_id = $1 ORDER BY checkpoint_version`, runID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auditedCheckpoint, error) {
		var c auditedCheckpoint
		return c, r.Scan(&c.version, &c.covered, &c.state)
	})
	require.NoError(t, err)
	return out
}

// requireCheckpointsMatchLog asserts that each checkpoint restores to the
// fold of the log up to its covered runSeq, and to the full replay once
// the rest of the log is folded in.
func requireCheckpointsMatchLog(t *testing.T, cps []auditedCheckpoint, evs []events.Event) {
	t.Helper()
	var approved events.RunApprovedData
	require.NoError(t, evs[0].Data(&approved))
	var p plan.Plan
	require.NoError(t, json.Unmarshal(approved.Plan, &p))
	p.ApplyDefaults()
	full, err := decide.Fold(&p, evs)
	require.NoError(t, err)
	for i, c := range cps {
		require.Equal(t, int64(i+1), c.version, "checkpoint versions go up by one per rotation")
		restored, err := decide.RestoreCheckpoint(&p, c.state)
		require.NoError(t, err)
		prefix, err := decide.Fold(&p, evs[:c.covered])
		require.NoError(t, err)
		require.Equal(t, prefix, restored, "checkpoint %d is the fold up to runSeq %d", c.version, c.covered)
		rest, err := restored.Apply(evs[c.covered:]...)
		require.NoError(t, err)
		require.Equal(t, full, rest, "checkpoint %d plus the rest of the log is the full replay", c.version)
	}
}

// startEngine runs an engine in this process and returns the function
// that stops it (idempotent; the test's end calls it too).
func (s *stack) startEngine(t *testing.T, cfg engine.Config) func() {
	t.Helper()
	cfg.TaskKeys = cmp.Or(cfg.TaskKeys, testTaskKeys)
	cfg.Logger = cmp.Or(cfg.Logger, s.logger)
	eng, err := engine.New(s.db.Pool, s.nats.Conn(t), cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	var stopped bool
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitEvents waits until the run's log holds at least n events.
func (s *stack) waitEvents(t *testing.T, runID string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		head, err := s.log.RunHead(t.Context(), runID)
		return err == nil && head >= int64(n)
	}, 2*waitFor, 10*time.Millisecond, "run %s reaches %d events", runID, n)
}

// waitTerminalLong is waitTerminal for a log longer than one fetch
// (eventlog.DefaultFetchLimit): it waits for the run's terminal event and
// returns the whole log.
func (s *stack) waitTerminalLong(t *testing.T, runID string) []events.Event {
	t.Helper()
	var evs []events.Event
	require.Eventually(t, func() bool {
		got, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 1<<20)
		evs = got
		return err == nil && terminal(evs) != ""
	}, 2*waitFor, 10*time.Millisecond, "run %s reaches a terminal state", runID)
	return evs
}

// A 500-step run (10 chains of 50 steps) survives an engine killed
// mid-round and an engine restarted, and is checkpointed all along: checkpoints rotate every
// CheckpointEverySteps ended attempts, under every engine, each one is
// the fold of the log up to the runSeq it covers, and restoring any of
// them and folding the rest of the log gives the full replay.
func TestLongRunCheckpointsSurviveRestarts(t *testing.T) {
	t.Parallel()
	const steps = 500
	s := newStack(t)
	auditCheckpoints(t, s)
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, chainsPlan(t, 10, steps/10))

	// The first engine, default thresholds (50 steps), dies inside the
	// first round that commits once the log holds 600 events, before the
	// commit.
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+s.db.URL, childNATSEnv+"="+s.nats.URL(), childCrashEnv+"=before-commit-past:600")
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "child output:\n%s", out)
	require.Equal(t, childExit, exitErr.ExitCode(), "output:\n%s", out)
	killedAt, err := s.log.RunHead(t.Context(), runID)
	require.NoError(t, err)
	require.Less(t, killedAt, int64(700), "the engine died mid-way")

	// The second rotates every 20 and is stopped gracefully further on;
	// the third finishes with the defaults.
	stop := s.startEngine(t, engine.Config{AckWait: crashConfig.AckWait, CheckpointEverySteps: 20})
	s.waitEvents(t, runID, 1100)
	stop()
	s.startEngine(t, engine.Config{AckWait: crashConfig.AckWait})
	evs := s.waitTerminalLong(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)

	cps := auditedCheckpoints(t, s, runID)
	require.GreaterOrEqual(t, len(cps), 12, "rotated under all three engines")
	last := cps[len(cps)-1]
	require.Greater(t, last.covered, int64(len(evs))-3*50-3, "the latest checkpoint is at most ~50 steps behind")
	var current int64
	require.NoError(t, s.db.Pool.QueryRow(t.Context(),
		`SELECT checkpoint_version FROM run_checkpoints WHERE run_id = $1`, runID).Scan(&current))
	require.Equal(t, last.version, current, "one row per run, at the latest version")
	requireCheckpointsMatchLog(t, cps, evs)
}

// auditTasks records every task message any engine enqueues, in
// test_tasks, by a trigger on the outbox (the relay deletes the rows).
func auditTasks(t *testing.T, s *stack) {
	t.Helper()
	_, err := s.db.Pool.Exec(t.Context(), `
		CREATE TABLE test_tasks (dedupe_id text NOT NULL);
		CREATE FUNCTION test_task_audit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.subject LIKE 'weft.tasks.%' THEN INSERT INTO test_tasks VALUES (NEW.dedupe_id); END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER test_task_audit AFTER INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION test_task_audit();`)
	require.NoError(t, err)
}

// Two cas-required engines on one database and one JetStream drive one
// run of four chains whose worker reports every result twice (two
// messages) and sends a signal for every task it takes, so that rounds of
// the run from both consumers of both engines, and the signals' appends,
// race: the log holds every logical attempt's events once, every logical
// attempt was enqueued as a task exactly once, and every checkpoint
// matches the log.
func TestTwoCASEnginesRaceOnOneRun(t *testing.T) {
	t.Parallel()
	const steps = 40
	s := newStack(t)
	auditTasks(t, s)
	auditCheckpoints(t, s)
	rawWorkerFn(t, s.js, "default", func(tk task.Task, report func(task.Result)) {
		s.signal(t, tk.RunID, "noise", "noise-"+tk.StepID, "")
		report(task.NewResult(tk, task.Started, "", "raw"))
		done := echo(tk)
		report(done)
		dup := done
		dup.IdempotencyKey += "-again" // another Nats-Msg-Id: delivered too
		report(dup)
	})
	cfg := engine.Config{CheckpointOwnership: engine.CASRequired, CheckpointEverySteps: 4}
	s.startEngine(t, cfg)
	s.startEngine(t, cfg)
	runID := s.start(t, chainsPlan(t, 4, steps/4))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
	rows, err := s.db.Pool.Query(t.Context(), `SELECT dedupe_id, count(*)::int FROM test_tasks GROUP BY dedupe_id`)
	require.NoError(t, err)
	counts := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { counts[id] = n; return nil })
	require.NoError(t, err)
	require.Len(t, counts, steps, "one logical attempt per step, each enqueued")
	for id, n := range counts {
		require.NotContains(t, id, "/resend-", "no resend: %s", id)
		require.Equal(t, 1, n, "task %s enqueued once", id)
	}
	requireCheckpointsMatchLog(t, auditedCheckpoints(t, s, runID), evs)
}
