package intake_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/internal/weftest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

func TestMain(m *testing.M) { weftest.Main(m) }

var (
	operator = auth.Principal{KeyID: "op", TenantID: "acme", Role: auth.RoleOperator}
	viewer   = auth.Principal{KeyID: "view", TenantID: "acme", Role: auth.RoleViewer}
	stranger = auth.Principal{KeyID: "other", TenantID: "globex", Role: auth.RoleAdmin}
)

const planDoc = `{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"echo"},{"id":"w","kind":"waitSignal","signal":"go","dependsOn":["a"]}]}`

// clock is a test clock that only moves when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type bundle struct {
	db    *weftest.DB
	log   *eventlog.Store
	in    *intake.Intake
	clock *clock
	cfg   intake.Config
}

func setup(t *testing.T, cfg intake.Config) *bundle {
	t.Helper()
	db := weftest.NewDB(t)
	c := &clock{now: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	cfg.Now = c.Now
	log := eventlog.New(db.Pool)
	in, err := intake.New(db.Pool, log, auth.RoleAuthorizer{}, cfg)
	require.NoError(t, err)
	return &bundle{db: db, log: log, in: in, clock: c, cfg: cfg}
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
	return b.in.SignalSend(context.Background(), operator, intake.Signal{RunID: runID, Name: name, ID: id, Payload: json.RawMessage(`{"ok":true}`)})
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
	outbox = b.count(t, `SELECT count(*) FROM outbox WHERE subject = 'weft.events.' || $1 AND headers->>'Weft-Event-Type' = 'SignalAccepted'`, runID)
	return evs, outbox
}

// requireCode requires err to be a refusal with code and returns it (as a
// value: a returned error would have to be checked).
func requireCode(t *testing.T, err error, code string) intake.Error {
	t.Helper()
	ierr, ok := errors.AsType[*intake.Error](err)
	require.True(t, ok, "want *intake.Error %s, got %v", code, err)
	require.Equal(t, code, ierr.Code, ierr.Message)
	return *ierr
}
