package intake_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

func TestRunStartIsIdempotentOnItsTuple(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	ctx := context.Background()
	first, err := b.in.RunStart(ctx, operator, startReq("req-1"))
	require.NoError(t, err)
	require.True(t, first.Created)
	require.False(t, first.Duplicate)
	require.Equal(t, "APPROVED", first.Status)

	again, err := b.in.RunStart(ctx, operator, startReq("req-1"))
	require.NoError(t, err)
	require.False(t, again.Created)
	require.True(t, again.Duplicate)
	require.Equal(t, first.RunID, again.RunID)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM run_events WHERE event_type = 'RunApproved'`))

	// Any field of the tuple makes a new start.
	for _, change := range []func(*api.StartRunRequest){
		func(r *api.StartRunRequest) { r.ProjectID = "p2" },
		func(r *api.StartRunRequest) { r.EnvironmentID = "prod" },
		func(r *api.StartRunRequest) { r.RunRequestID = "req-2" },
		func(r *api.StartRunRequest) { r.RunRequestID = "REQ-1" },
	} {
		req := startReq("req-1")
		change(&req)
		res, err := b.in.RunStart(ctx, operator, req)
		require.NoError(t, err)
		require.True(t, res.Created)
	}
	// Components are escaped before hashing: "a|b"+"c" is not "a"+"b|c".
	r1, r2 := startReq("x"), startReq("x")
	r1.ProjectID, r1.EnvironmentID = "a", "b|c"
	r2.ProjectID, r2.EnvironmentID = "a|b", "c"
	for _, r := range []api.StartRunRequest{r1, r2} {
		res, err := b.in.RunStart(ctx, operator, r)
		require.NoError(t, err)
		require.True(t, res.Created)
	}
}

func TestRunStartRaceStartsOneRun(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	const n = 12
	ids := make([]string, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-gate
			res, err := b.in.RunStart(context.Background(), operator, startReq("race"))
			require.NoError(t, err)
			ids[i], created[i] = res.RunID, res.Created
		})
	}
	close(gate)
	wg.Wait()
	wins := 0
	for i := range n {
		require.Equal(t, ids[0], ids[i])
		if created[i] {
			wins++
		}
	}
	require.Equal(t, 1, wins)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM run_events WHERE event_type = 'RunApproved'`))
}

func TestRunStartWithoutRequestIDIsNotIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	a, err := b.in.RunStart(context.Background(), operator, startReq(""))
	require.NoError(t, err)
	c, err := b.in.RunStart(context.Background(), operator, startReq(""))
	require.NoError(t, err)
	require.NotEqual(t, a.RunID, c.RunID)
	require.NotEqual(t, a.RunRequestID, c.RunRequestID)
}

func TestRunRequestRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{RunRequestRetention: time.Hour})
	ctx := context.Background()
	first, err := b.in.RunStart(ctx, operator, startReq("r"))
	require.NoError(t, err)
	b.clock.Add(time.Hour)
	n, err := b.in.ExpiredDelete(ctx, 100)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	again, err := b.in.RunStart(ctx, operator, startReq("r"))
	require.NoError(t, err)
	require.True(t, again.Created, "the dedupe lasts as long as the record")
	require.NotEqual(t, first.RunID, again.RunID)
}

func TestRunStartRejectedUnderBackpressure(t *testing.T) {
	t.Parallel()
	lim := admission.Limit{MaxConcurrentRuns: 1, Policy: admission.Reject, RetryAfter: 7 * time.Second}
	b := setup(t, intake.Config{Admission: admission.Limits{Default: lim}})
	ctx := context.Background()
	first, err := b.in.RunStart(ctx, operator, startReq("a"))
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE engine_runs SET started_at = now() WHERE run_id = $1`, first.RunID)
	require.NoError(t, err)

	_, err = b.in.RunStart(ctx, operator, startReq("b"))
	ierr := intaketest.RequireRefused(t, err, api.CodeOverloaded, "")
	require.Equal(t, 7*time.Second, ierr.RetryAfter)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM run_requests`), "the refused request left no record")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM run_events WHERE event_type = 'RunApproved'`))

	dup, err := b.in.RunStart(ctx, operator, startReq("a"))
	require.NoError(t, err, "a repeat is answered even at the limit")
	require.True(t, dup.Duplicate)
}

func TestRunStartValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{MaxRunInputBytes: 64})
	cases := []struct {
		name   string
		change func(*api.StartRunRequest)
		code   string
	}{
		{"plan id differs", func(r *api.StartRunRequest) { r.PlanID = "other" }, api.CodeInvalidArgument},
		{"plan version differs", func(r *api.StartRunRequest) { r.PlanVersion = "2" }, api.CodeInvalidArgument},
		{"cyclic plan", func(r *api.StartRunRequest) {
			r.Plan = json.RawMessage(`{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"x","dependsOn":["b"]},{"id":"b","activity":"x","dependsOn":["a"]}]}`)
		}, api.CodeInvalidArgument},
		{"plan not an object", func(r *api.StartRunRequest) { r.Plan = json.RawMessage(`"planId: hello"`) }, api.CodeInvalidArgument},
		{"missing plan", func(r *api.StartRunRequest) { r.Plan = nil }, api.CodeInvalidArgument},
		{"empty tenant", func(r *api.StartRunRequest) { r.TenantID = "" }, api.CodeInvalidArgument},
		{"environment with a wildcard", func(r *api.StartRunRequest) { r.EnvironmentID = "dev.>" }, api.CodeInvalidArgument},
		{"request id with a control character", func(r *api.StartRunRequest) { r.RunRequestID = "a\x01" }, api.CodeInvalidArgument},
		{"input over the limit", func(r *api.StartRunRequest) {
			r.Input = json.RawMessage(`"0123456789012345678901234567890123456789012345678901234567890123"`)
		}, api.CodePayloadTooLarge},
		{"input with \\u0000", func(r *api.StartRunRequest) { r.Input = json.RawMessage(`"\u0000"`) }, api.CodeInvalidArgument},
		{"another tenant", func(r *api.StartRunRequest) { r.TenantID = "globex" }, api.CodePermissionDenied},
	}
	for _, c := range cases {
		req := startReq("v")
		c.change(&req)
		_, err := b.in.RunStart(context.Background(), operator, req)
		intaketest.RequireRefused(t, err, c.code, "")
	}
	_, err := b.in.RunStart(context.Background(), viewer, startReq("v"))
	intaketest.RequireRefused(t, err, api.CodePermissionDenied, "")
	require.Zero(t, b.count(t, `SELECT count(*) FROM run_requests`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM run_events`))

	res, err := b.in.RunStart(context.Background(), operator, startReq("v"))
	require.NoError(t, err)
	evs := b.eventsOf(t, res.RunID)
	require.Len(t, evs, 1)
	var d events.RunApprovedData
	require.NoError(t, evs[0].Data(&d))
	require.Equal(t, "v", d.RunRequestID)
	require.Equal(t, "acme", d.TenantID)
}
