package schedule_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/schedule"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// op is an operator of tenant acme; viewer may only read; other is of
// another tenant.
var op, viewer, other = intaketest.Operator, intaketest.Viewer, intaketest.Stranger

const planDoc = `{"planId":"nightly","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`

// bundle is a Service over a fresh database, with the clock it reads.
type bundle struct {
	db    *weftest.DB
	clk   *intaketest.Clock
	svc   *schedule.Service
	in    *intake.Intake
	inCfg intake.Config
}

// setup starts at 08:59 on 2 March 2026, UTC.
func setup(t *testing.T, cfg schedule.Config) *bundle {
	t.Helper()
	return setupIntake(t, cfg, intake.Config{})
}

// setupIntake is setup with the gateway's intake configured by inCfg.
func setupIntake(t *testing.T, cfg schedule.Config, inCfg intake.Config) *bundle {
	t.Helper()
	b := &bundle{db: weftest.NewDB(t), clk: intaketest.NewClock(at(8, 59)), inCfg: inCfg}
	b.svc, b.in = b.scheduler(t, cfg)
	return b
}

// scheduler returns another Service on the bundle's database and clock,
// as a second gateway would run it.
func (b *bundle) scheduler(t *testing.T, cfg schedule.Config) (*schedule.Service, *intake.Intake) {
	t.Helper()
	inCfg := b.inCfg
	inCfg.Now = b.clk.Now
	in := intaketest.New(t, b.db, inCfg)
	cfg.Now = b.clk.Now
	svc, err := schedule.New(b.db.Pool, in, nil, auth.RoleAuthorizer{}, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return svc, in
}

// request is a schedule of planDoc in acme. Its overlap policy is allow,
// so that runs the tests leave active do not hold later fires back.
func request(id, cron string) api.ScheduleRequest {
	return api.ScheduleRequest{ScheduleID: id, TenantID: "acme", ProjectID: "p", EnvironmentID: "dev", Cron: cron,
		Plan: json.RawMessage(planDoc), OverlapPolicy: api.OverlapAllow}
}

func (b *bundle) create(t *testing.T, req api.ScheduleRequest) api.Schedule {
	t.Helper()
	s, created, err := b.svc.Create(t.Context(), op, req)
	require.NoError(t, err)
	require.True(t, created)
	return s
}

func (b *bundle) get(t *testing.T, id string) api.Schedule {
	t.Helper()
	s, err := b.svc.Get(t.Context(), op, id)
	require.NoError(t, err)
	return s
}

// tickAt moves the clock to now and polls once.
func (b *bundle) tickAt(t *testing.T, now time.Time) {
	t.Helper()
	b.clk.Set(now)
	_, err := b.svc.Tick(t.Context())
	require.NoError(t, err)
}

// fired is a run a schedule started.
type fired struct {
	requestID, runID string
	input            string // the run's input, JSON
}

// runs lists the runs of schedule id, in the order they were started.
func (b *bundle) runs(t *testing.T, id string) []fired {
	t.Helper()
	rows, err := b.db.Pool.Query(t.Context(), `
		SELECT r.run_request_id, r.run_id::text, e.event_data->'input'
		FROM run_requests r JOIN run_events e ON e.run_id = r.run_id AND e.run_seq = 1
		WHERE r.run_request_id LIKE $1 || ':%' ORDER BY r.run_id`, id)
	require.NoError(t, err)
	defer rows.Close()
	var out []fired
	for rows.Next() {
		var f fired
		require.NoError(t, rows.Scan(&f.requestID, &f.runID, &f.input))
		out = append(out, f)
	}
	require.NoError(t, rows.Err())
	return out
}

// requestIDs lists the run request ids of schedule id's runs.
func (b *bundle) requestIDs(t *testing.T, id string) []string {
	t.Helper()
	var out []string
	for _, f := range b.runs(t, id) {
		out = append(out, f.requestID)
	}
	return out
}

// endRun ends a run as the engine's last round does: it leaves
// engine_runs.
func (b *bundle) endRun(t *testing.T, runID string) {
	t.Helper()
	_, err := b.db.Pool.Exec(t.Context(), `DELETE FROM engine_runs WHERE run_id = $1`, runID)
	require.NoError(t, err)
}

// rid is the run request id of a fire of schedule id at t.
func rid(id string, t time.Time) string { return id + ":" + t.UTC().Format(time.RFC3339) }
