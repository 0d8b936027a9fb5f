package bulk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/signal-gateway/internal/bulk"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

func TestMain(m *testing.M) { weftest.MainWithChild(m, childDBEnv, dyingGateway) }

// The gateway process TestBulkJobSurvivesItsGatewaysDeath kills: when
// childDBEnv names a database, the test binary runs dyingGateway instead
// of the tests.
const (
	childDBEnv = "WEFT_BULK_CHILD_DB"
	childExit  = 3
)

// dyingGateway runs bulk jobs on the database childDBEnv names, batches
// of 4, and exits with childExit once its second batch's actions are
// done, before their progress is recorded.
func dyingGateway() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, os.Getenv(childDBEnv))
	if err != nil {
		return err
	}
	defer pool.Close()
	log := eventlog.New(pool)
	in, err := intake.New(pool, log, journal.New(log), auth.RoleAuthorizer{}, intake.Config{})
	if err != nil {
		return err
	}
	var batches atomic.Int32
	svc := bulk.New(pool, in, auth.RoleAuthorizer{}, bulk.Config{Batch: 4, BeforeRecord: func() {
		if batches.Add(1) == 2 {
			os.Exit(childExit)
		}
	}})
	svc.Run(ctx)
	return errors.New("the gateway never died")
}

// fixture is a database with runs started through the intake and
// snapshots as the projector writes them.
type fixture struct {
	db    *weftest.DB
	in    *intake.Intake
	clock *intaketest.Clock
	runs  int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := weftest.NewDB(t)
	clock := intaketest.NewClock(time.Now().UTC())
	return &fixture{db: db, in: intaketest.New(t, db, intake.Config{Now: clock.Now}), clock: clock}
}

// start starts n runs of tenant acme in status, and returns their ids in
// creation order.
func (f *fixture) start(t *testing.T, n int, status events.RunStatus, labels string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		f.runs++
		res, err := f.in.RunStart(t.Context(), intaketest.Operator, api.StartRunRequest{TenantID: "acme", ProjectID: "p",
			EnvironmentID: "dev", PlanID: "hello", PlanVersion: "1", RunRequestID: fmt.Sprintf("r-%d", f.runs),
			Plan: intaketest.PlanWaitingFor("go")})
		require.NoError(t, err)
		ids[i] = res.RunID
		intaketest.PutSnapshot(t, f.db.Pool, res.RunID, status, labels, f.clock.Now().Add(time.Duration(f.runs)*time.Millisecond))
	}
	return ids
}

// cancels counts the CANCEL signals accepted in each of runs' logs.
func (f *fixture) cancels(t *testing.T, runs []string) map[string]int {
	t.Helper()
	return intaketest.SignalsAccepted(t, f.db.Pool, runs, "CANCEL")
}

// runJob runs svc's runner until job id is no longer RUNNING.
func runJob(t *testing.T, svc *bulk.Service, id string) api.BulkJob {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { svc.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	var job api.BulkJob
	require.Eventually(t, func() bool {
		var err error
		job, err = svc.Get(t.Context(), intaketest.Operator, id)
		return err == nil && job.Status != api.BulkRunning
	}, 30*time.Second, 10*time.Millisecond)
	return job
}

// A CANCEL job signals every run its filter matched once, skips the
// ended ones with their reason, and its progress adds up; the same
// request again answers the job, another under its id conflicts.
func TestBulkCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	running := f.start(t, 7, events.RunStatusRunning, `{"team":"a"}`)
	ended := f.start(t, 2, events.RunStatusCompleted, `{"team":"a"}`)
	other := f.start(t, 3, events.RunStatusRunning, `{"team":"b"}`)
	svc := bulk.New(f.db.Pool, f.in, auth.RoleAuthorizer{}, bulk.Config{Batch: 3, Now: f.clock.Now})
	req := api.BulkRequest{BulkID: "b1", Action: api.BulkCancel, Filter: api.BulkFilter{Labels: map[string]string{"team": "a"}}}
	job, created, err := svc.Create(t.Context(), intaketest.Operator, req)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, int64(9), job.Matched)

	job = runJob(t, svc, "b1")
	require.Equal(t, api.BulkDone, job.Status)
	require.Equal(t, int64(7), job.Done)
	require.Equal(t, int64(2), job.Skipped)
	require.Equal(t, map[string]int{bulk.ReasonEnded: 2}, job.SkippedReasons)
	got := f.cancels(t, append(append(running, ended...), other...))
	require.Len(t, got, 7)
	for _, id := range running {
		require.Equal(t, 1, got[id], "run %s signalled once", id)
	}

	again, created, err := svc.Create(t.Context(), intaketest.Operator, req)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, job.Done, again.Done)
	req.Action = api.BulkPause
	_, _, err = svc.Create(t.Context(), intaketest.Operator, req)
	intaketest.RequireRefused(t, err, api.CodeIdempotencyConflict, "")
}

// A gateway killed after a batch's signals and before its progress is
// recorded leaves the job to another, which takes it over when the lease
// runs out: no run is signalled twice, and the progress is exact.
func TestBulkJobSurvivesItsGatewaysDeath(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	runs := f.start(t, 10, events.RunStatusRunning, `{}`)
	svc := bulk.New(f.db.Pool, f.in, auth.RoleAuthorizer{}, bulk.Config{Batch: 4})
	_, _, err := svc.Create(t.Context(), intaketest.Operator, api.BulkRequest{BulkID: "b2", Action: api.BulkCancel})
	require.NoError(t, err)

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+f.db.URL)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "child output:\n%s", out)
	require.Equal(t, childExit, exitErr.ExitCode(), "the gateway died at its second batch; output:\n%s", out)
	job, err := svc.Get(t.Context(), intaketest.Operator, "b2")
	require.NoError(t, err)
	require.Equal(t, api.BulkRunning, job.Status)
	require.Equal(t, int64(4), job.Done, "only the first batch was recorded")
	require.Len(t, f.cancels(t, runs), 8, "two batches were signalled")

	later := func() time.Time { return time.Now().Add(bulk.DefaultLease) } // the dead gateway's lease has run out
	second := bulk.New(f.db.Pool, f.in, auth.RoleAuthorizer{}, bulk.Config{Batch: 4, Now: later})
	job = runJob(t, second, "b2")
	require.Equal(t, api.BulkDone, job.Status)
	require.Equal(t, int64(10), job.Done, "every run counted once")
	require.Zero(t, job.Skipped+job.Failed)
	for id, n := range f.cancels(t, runs) {
		require.Equal(t, 1, n, "run %s signalled once", id)
	}
}

// Bad requests are refused before anything is written; a filter that
// matches more than MaxRuns runs is refused, one that matches exactly
// MaxRuns is taken.
func TestBulkRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.start(t, 3, events.RunStatusRunning, `{}`)
	svc := bulk.New(f.db.Pool, f.in, auth.RoleAuthorizer{}, bulk.Config{MaxRuns: 2, Now: f.clock.Now})
	for name, tc := range map[string]struct {
		req   api.BulkRequest
		field string
	}{
		"no id":      {api.BulkRequest{Action: api.BulkCancel}, "bulkId"},
		"bad action": {api.BulkRequest{BulkID: "x", Action: "STOP"}, "action"},
		"bad status": {api.BulkRequest{BulkID: "x", Action: api.BulkCancel, Filter: api.BulkFilter{Status: []string{"DONE"}}}, "filter.status[0]"},
		"bad parent": {api.BulkRequest{BulkID: "x", Action: api.BulkCancel, Filter: api.BulkFilter{Parent: "p"}}, "filter.parent"},
		"too many":   {api.BulkRequest{BulkID: "x", Action: api.BulkCancel}, "filter"},
	} {
		_, _, err := svc.Create(t.Context(), intaketest.Operator, tc.req)
		var e *intake.Error
		require.ErrorAs(t, err, &e, name)
		require.Equal(t, api.CodeInvalidArgument, e.Code, name)
		require.Contains(t, e.Message, tc.field, name)
	}
	_, _, err := svc.Create(t.Context(), intaketest.Viewer, api.BulkRequest{BulkID: "v", Action: api.BulkCancel})
	intaketest.RequireRefused(t, err, api.CodePermissionDenied, "")
	var jobs int
	require.NoError(t, f.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM bulk_jobs`).Scan(&jobs))
	require.Zero(t, jobs, "nothing written for a refusal")

	job, _, err := svc.Create(t.Context(), intaketest.Operator, api.BulkRequest{BulkID: "ok", Action: api.BulkCancel,
		Filter: api.BulkFilter{Status: []string{"RUNNING"}, PlanID: "hello"}})
	require.Error(t, err, "3 runs match, over the limit of 2")
	_ = job
	_, err = f.db.Pool.Exec(t.Context(), `UPDATE run_snapshots SET status = 'COMPLETED' WHERE run_id = (SELECT run_id FROM run_snapshots ORDER BY run_id LIMIT 1)`)
	require.NoError(t, err)
	job, _, err = svc.Create(t.Context(), intaketest.Operator, api.BulkRequest{BulkID: "ok", Action: api.BulkCancel,
		Filter: api.BulkFilter{Status: []string{"RUNNING"}}})
	require.NoError(t, err, "exactly the limit")
	require.Equal(t, int64(2), job.Matched)
}

// A job that ended is kept for the Retention, and then removed with its
// runs' list; a running job is kept whatever its age.
func TestBulkJobRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.start(t, 2, events.RunStatusRunning, `{}`)
	svc := bulk.New(f.db.Pool, f.in, auth.RoleAuthorizer{}, bulk.Config{Now: f.clock.Now, Retention: time.Hour})
	for _, id := range []string{"ended", "running"} {
		_, _, err := svc.Create(t.Context(), intaketest.Operator, api.BulkRequest{BulkID: id, Action: api.BulkPause})
		require.NoError(t, err)
	}
	_, err := svc.Cancel(t.Context(), intaketest.Operator, "ended")
	require.NoError(t, err)
	f.clock.Add(time.Hour - time.Microsecond)
	n, err := svc.ExpiredDelete(t.Context(), 10)
	require.NoError(t, err)
	require.Zero(t, n, "within the retention")
	f.clock.Add(time.Microsecond)
	n, err = svc.ExpiredDelete(t.Context(), 10)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	_, err = svc.Get(t.Context(), intaketest.Operator, "ended")
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
	_, err = svc.Get(t.Context(), intaketest.Operator, "running")
	require.NoError(t, err)
	var runs int
	require.NoError(t, f.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM bulk_job_runs WHERE bulk_id = 'ended'`).Scan(&runs))
	require.Zero(t, runs)
}
