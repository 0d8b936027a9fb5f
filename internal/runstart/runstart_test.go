package runstart_test

import (
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// approveFunc approves a run one way: in the caller's transaction
// (ApproveTx) or in one of its own (Approve).
type approveFunc func(t *testing.T, db *weftest.DB, a runstart.Approver, req runstart.Request) (string, error)

var ways = map[string]approveFunc{
	"ApproveTx": func(t *testing.T, db *weftest.DB, a runstart.Approver, req runstart.Request) (string, error) {
		var runID string
		err := pgx.BeginFunc(t.Context(), db.Pool, func(tx pgx.Tx) error {
			var err error
			runID, err = a.ApproveTx(t.Context(), tx, req)
			return err
		})
		return runID, err
	},
	"Approve": func(t *testing.T, db *weftest.DB, a runstart.Approver, req runstart.Request) (string, error) {
		return a.Approve(t.Context(), db.Pool, req)
	},
}

// eachWay runs test once per approveFunc.
func eachWay(t *testing.T, test func(t *testing.T, approve approveFunc)) {
	for name, approve := range ways {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, approve)
		})
	}
}

func counts(t *testing.T, db *weftest.DB) (evs, outbox, runs int) {
	t.Helper()
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM run_events), (SELECT count(*) FROM outbox), (SELECT count(*) FROM engine_runs)`).
		Scan(&evs, &outbox, &runs))
	return evs, outbox, runs
}

// onePlan is a one-step plan, validated.
func onePlan(t *testing.T) plan.Validated {
	t.Helper()
	v, err := (&plan.Plan{PlanID: "p", PlanVersion: "1", Steps: []plan.Step{{ID: "a", Activity: "echo"}}}).Validated(plan.Limits{})
	require.NoError(t, err)
	return v
}

// The plan of a start is validated once, where the start is checked,
// and approving it cannot validate it again. The type system proves it:
// a Request carries its plan only as a plan.Validated, which only a
// validation makes (its fields are unexported, pkg/plan pins that) and
// which holds the plan as its encoding, with no *plan.Plan to validate.
// This pins the structure: a field that carries a plan any other way
// fails here.
func TestRequestCarriesItsPlanOnlyValidated(t *testing.T) {
	t.Parallel()
	validated := reflect.TypeFor[plan.Validated]()
	var plans []string
	for f := range reflect.TypeFor[runstart.Request]().Fields() {
		if f.Type == validated {
			plans = append(plans, f.Name)
			continue
		}
		require.NotContains(t, []reflect.Type{reflect.TypeFor[plan.Plan](), reflect.TypeFor[*plan.Plan]()}, f.Type,
			"Request.%s carries a plan nobody need have validated", f.Name)
	}
	require.Equal(t, []string{"Plan"}, plans)
	for f := range validated.Fields() {
		require.NotEqual(t, reflect.TypeFor[*plan.Plan](), f.Type, "plan.Validated.%s would let its holder validate again", f.Name)
	}
}

func TestApproveWritesRunApprovedWithPlan(t *testing.T) {
	eachWay(t, testApproveWritesRunApprovedWithPlan)
}

func testApproveWritesRunApprovedWithPlan(t *testing.T, approve approveFunc) {
	db := weftest.NewDB(t)
	log := eventlog.New(db.Pool)
	a := runstart.Approver{Journal: journal.New(log)}
	p := onePlan(t)
	runID, err := approve(t, db, a, runstart.Request{Plan: p, EnvironmentID: "dev", RunRequestID: "r1"})
	require.NoError(t, err)
	evs, err := log.EventsFetchAfter(t.Context(), runID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	var d events.RunApprovedData
	require.NoError(t, evs[0].Data(&d))
	require.Equal(t, "dev", d.EnvironmentID)
	require.Equal(t, "r1", d.RunRequestID)
	require.Equal(t, [2]string{"p", "1"}, [2]string{d.PlanID, d.PlanVersion})
	require.JSONEq(t, string(p.JSON()), string(d.Plan), "the validated plan is stored as it is")
	stored, err := plan.Parse(d.Plan, plan.Limits{})
	require.NoError(t, err, "the stored plan is a valid plan")
	require.Equal(t, "p", stored.PlanID)
	require.Equal(t, plan.DefaultQueue, stored.Steps[0].Queue, "stored with its defaults applied")
	_, outbox, runs := counts(t, db)
	require.Equal(t, 1, outbox, "the approval is on its way to the bus")
	require.Equal(t, 1, runs, "and registered with the engine")
}

func TestApproveRefusesBeforeWriting(t *testing.T) {
	eachWay(t, testApproveRefusesBeforeWriting)
}

func testApproveRefusesBeforeWriting(t *testing.T, approve approveFunc) {
	db := weftest.NewDB(t)
	a := runstart.Approver{
		Journal:   journal.New(eventlog.New(db.Pool)),
		Admission: admission.Limits{Default: admission.Limit{MaxConcurrentRuns: 1, Policy: admission.Reject}},
	}
	_, err := approve(t, db, a, runstart.Request{Plan: onePlan(t), EnvironmentID: "e"})
	require.NoError(t, err)

	_, err = approve(t, db, a, runstart.Request{Plan: onePlan(t), EnvironmentID: "e"})
	require.ErrorIs(t, err, admission.ErrRejected, "the environment is at its limit")
	_, err = approve(t, db, a, runstart.Request{EnvironmentID: "other"})
	require.ErrorContains(t, err, "no plan")

	evs, outbox, runs := counts(t, db)
	require.Equal(t, [3]int{1, 1, 1}, [3]int{evs, outbox, runs}, "only the first run was written")
}

// A run id already in the log fails the approval's compare-and-swap on
// the head (0): the approval writes nothing, and the run is untouched.
func TestApproveOfAnExistingRunWritesNothing(t *testing.T) {
	eachWay(t, func(t *testing.T, approve approveFunc) {
		db := weftest.NewDB(t)
		a := runstart.Approver{Journal: journal.New(eventlog.New(db.Pool))}
		runID, err := approve(t, db, a, runstart.Request{Plan: onePlan(t)})
		require.NoError(t, err)
		_, err = approve(t, db, a, runstart.Request{Plan: onePlan(t), RunID: runID})
		require.ErrorIs(t, err, eventlog.ErrConflict)
		evs, outbox, runs := counts(t, db)
		require.Equal(t, [3]int{1, 1, 1}, [3]int{evs, outbox, runs}, "only the first approval was written")
	})
}

// An approval costs two round trips through one journal.Write: the
// append of RunApproved with its engine_runs row (with BEGIN, on a
// transaction of its own), then its outbox row (with COMMIT).
func TestApproveRoundTrips(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	pool, calls := db.CountedPool(t)
	a := runstart.Approver{Journal: journal.New(eventlog.New(pool))}
	_, err := a.Approve(t.Context(), pool, runstart.Request{Plan: onePlan(t)}) // prepares the statements
	require.NoError(t, err)

	before := calls.N()
	_, err = a.Approve(t.Context(), pool, runstart.Request{Plan: onePlan(t)})
	require.NoError(t, err)
	require.Equal(t, 2, calls.N()-before, "Approve")

	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(t.Context()) }()
	before = calls.N()
	_, err = a.ApproveTx(t.Context(), tx, runstart.Request{Plan: onePlan(t)})
	require.NoError(t, err)
	require.Equal(t, 2, calls.N()-before, "ApproveTx in the caller's transaction")
	require.NoError(t, tx.Commit(t.Context()))
	evs, outbox, runs := counts(t, db)
	require.Equal(t, []int{3, 3, 3}, []int{evs, outbox, runs})
}
