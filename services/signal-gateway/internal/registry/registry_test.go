package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/registry"
)

func TestMain(m *testing.M) { weftest.Main(m) }

func setup(t *testing.T) (*registry.Service, *weftest.DB) {
	t.Helper()
	db := weftest.NewDB(t)
	return registry.New(db.Pool, intaketest.New(t, db, intake.Config{}), auth.RoleAuthorizer{}, registry.Config{}), db
}

func push(activity string) api.PlanPushRequest {
	return api.PlanPushRequest{ProjectID: "p",
		Plan: json.RawMessage(fmt.Sprintf(`{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":%q}]}`, activity))}
}

// TestPushConcurrent: concurrent pushes of one version store one row.
// Those with its plan answer it, one of them as created; those with
// another plan are refused with PlanVersionConflict.
func TestPushConcurrent(t *testing.T) {
	t.Parallel()
	svc, db := setup(t)
	const n = 8
	var wg sync.WaitGroup
	created := make([]bool, n)
	errs := make([]error, n)
	versions := make([]api.PlanVersion, n)
	for i := range n {
		wg.Go(func() {
			activity := "echo"
			if i%2 == 1 {
				activity = fmt.Sprintf("other%d", i)
			}
			versions[i], created[i], errs[i] = svc.Push(t.Context(), intaketest.Operator, push(activity))
		})
	}
	wg.Wait()
	var rows int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM plan_versions`).Scan(&rows))
	require.Equal(t, 1, rows)
	stored, err := svc.VersionGet(t.Context(), intaketest.Operator, "p", "hello", "1")
	require.NoError(t, err)
	var nCreated int
	for i := range n {
		if created[i] {
			nCreated++
		}
		if errs[i] == nil {
			require.Equal(t, stored, versions[i], "push %d answers the stored version", i)
			continue
		}
		e, ok := errors.AsType[*intake.Error](errs[i])
		require.True(t, ok, "push %d: %v", i, errs[i])
		require.Equal(t, api.CodePlanVersionConflict, e.Code, "push %d", i)
	}
	require.Equal(t, 1, nCreated, "one push stored the version")
}

// TestResolve: a ref resolves to its version with the stored plan;
// "latest" to the newest not archived; an unknown one is NotFound and an
// archived one PlanArchived.
func TestResolve(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t)
	ctx, op := t.Context(), intaketest.Operator
	_, _, err := svc.Push(ctx, op, push("echo"))
	require.NoError(t, err)
	req := push("echo")
	req.Plan = json.RawMessage(`{"planId":"hello","planVersion":"2","steps":[{"id":"a","activity":"echo"}]}`)
	_, _, err = svc.Push(ctx, op, req)
	require.NoError(t, err)

	v, err := svc.Resolve(ctx, op, "acme", "p", api.PlanRef{PlanID: "hello", PlanVersion: api.PlanVersionLatest})
	require.NoError(t, err)
	require.Equal(t, "2", v.PlanVersion)
	require.NotEmpty(t, v.Plan)
	_, err = svc.Archive(ctx, op, "p", "hello", "2")
	require.NoError(t, err)
	v, err = svc.Resolve(ctx, op, "acme", "p", api.PlanRef{PlanID: "hello", PlanVersion: api.PlanVersionLatest})
	require.NoError(t, err)
	require.Equal(t, "1", v.PlanVersion)
	_, err = svc.Resolve(ctx, op, "acme", "p", api.PlanRef{PlanID: "hello", PlanVersion: "2"})
	intaketest.RequireRefused(t, err, api.CodePlanArchived, "")
	_, err = svc.Resolve(ctx, op, "acme", "p", api.PlanRef{PlanID: "hello", PlanVersion: "3"})
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
	_, err = svc.Resolve(ctx, op, "acme", "q", api.PlanRef{PlanID: "hello", PlanVersion: "1"})
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
	_, err = svc.Resolve(ctx, intaketest.Stranger, "acme", "p", api.PlanRef{PlanID: "hello", PlanVersion: "1"})
	intaketest.RequireRefused(t, err, api.CodePermissionDenied, "")
}

// A planRef's resolution is reused for the ResolveTTL, so that a change
// made elsewhere (here, straight in the table, as another gateway would)
// is seen once it passes; a change through this registry is seen at once.
func TestResolveReusesResolutionsForTheTTL(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	svc := registry.New(db.Pool, intaketest.New(t, db, intake.Config{}), auth.RoleAuthorizer{},
		registry.Config{Now: clock, ResolveTTL: time.Second})
	_, _, err := svc.Push(t.Context(), intaketest.Operator, push("echo"))
	require.NoError(t, err)
	tenant := intaketest.Operator.TenantID
	latest := api.PlanRef{PlanID: "hello", PlanVersion: api.PlanVersionLatest}
	resolve := func() error {
		_, err := svc.Resolve(t.Context(), intaketest.Operator, tenant, "p", latest)
		return err
	}
	require.NoError(t, resolve())
	_, err = db.Pool.Exec(t.Context(), `UPDATE plan_versions SET archived_at = now()`)
	require.NoError(t, err)
	advance(999 * time.Millisecond)
	require.NoError(t, resolve(), "within the TTL the resolution is reused")
	advance(time.Millisecond)
	var e *intake.Error
	require.ErrorAs(t, resolve(), &e, "past the TTL the registry is read again")
	require.Equal(t, api.CodePlanArchived, e.Code)

	_, err = svc.Restore(t.Context(), intaketest.Operator, "p", "hello", "1")
	require.NoError(t, err)
	require.NoError(t, resolve())
	_, err = svc.Archive(t.Context(), intaketest.Operator, "p", "hello", "1")
	require.NoError(t, err)
	require.ErrorAs(t, resolve(), &e, "an archive through the registry is seen at once")
}
