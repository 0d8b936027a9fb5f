package intake_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// operator is an operator of tenant acme; viewer may only read; stranger
// is of another tenant.
var operator, viewer, stranger = intaketest.Operator, intaketest.Viewer, intaketest.Stranger

const planDoc = `{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"echo"},{"id":"w","kind":"waitSignal","signal":"go","dependsOn":["a"]}]}`

// bundle is an Intake over a fresh database, with the clock it reads.
type bundle struct {
	db    *weftest.DB
	log   *eventlog.Store
	in    *intake.Intake
	clock *intaketest.Clock
	cfg   intake.Config
}

// setup starts at 10:00 on 23 November 2026, UTC.
func setup(t *testing.T, cfg intake.Config) *bundle {
	t.Helper()
	b := &bundle{db: weftest.NewDB(t), clock: intaketest.NewClock(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))}
	cfg.Now = b.clock.Now
	b.in, b.log, b.cfg = intaketest.New(t, b.db, cfg), eventlog.New(b.db.Pool), cfg
	return b
}

// startReq is a valid start of planDoc in acme.
func startReq(requestID string) api.StartRunRequest {
	return api.StartRunRequest{TenantID: "acme", ProjectID: "p", EnvironmentID: "dev", PlanID: "hello", PlanVersion: "1",
		RunRequestID: requestID, Plan: json.RawMessage(planDoc), Input: json.RawMessage(`{"n":1}`)}
}

// run starts a run and returns its id.
func (b *bundle) run(t *testing.T) string {
	t.Helper()
	res, err := b.in.RunStart(context.Background(), operator, startReq(events.NewRunID()))
	require.NoError(t, err)
	return res.RunID
}

func ptr(s string) *string { return &s }

// signal sends name/id to runID as the operator.
func (b *bundle) signal(t *testing.T, runID, name string, id *string) (intake.SignalResult, error) {
	t.Helper()
	var payload json.RawMessage // a control signal takes none
	if !plan.IsControlSignal(name) {
		payload = json.RawMessage(`{"ok":true}`)
	}
	return b.in.SignalSend(context.Background(), operator, intake.Signal{RunID: runID, Name: name, ID: id, Payload: payload})
}

// eventsOf returns the types of runID's events, in order.
func (b *bundle) eventsOf(t *testing.T, runID string) []events.Event {
	t.Helper()
	evs, err := b.log.EventsFetchAfter(context.Background(), runID, 0, 1000)
	require.NoError(t, err)
	return evs
}

// count counts the rows of a query's single count(*) column.
func (b *bundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// accepted counts runID's SignalAccepted events and their outbox rows.
func (b *bundle) accepted(t *testing.T, runID string) (evs, outbox int) {
	t.Helper()
	evs = b.count(t, `SELECT count(*) FROM run_events WHERE run_id = $1 AND event_type = 'SignalAccepted'`, runID)
	outbox = b.count(t, `SELECT count(*) FROM outbox WHERE subject = 'weft.events.in.' || $1 AND headers->>'Weft-Event-Type' = 'SignalAccepted'`, runID)
	return evs, outbox
}
