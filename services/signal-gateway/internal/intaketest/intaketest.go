// Package intaketest sets up the gateway's intake for tests: of intake
// itself and of what starts runs through it (schedules, triggers, the
// gateway). It gives a clock the test moves, an Intake over a test
// database, the principals the tests act as, and the check that an error
// is a refusal. Only tests import it.
package intaketest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// The principals tests act as: an operator and a viewer of tenant acme,
// and an admin of another tenant, globex.
var (
	Operator = auth.Principal{KeyID: "op", TenantID: "acme", Role: auth.RoleOperator}
	Viewer   = auth.Principal{KeyID: "view", TenantID: "acme", Role: auth.RoleViewer}
	Stranger = auth.Principal{KeyID: "other", TenantID: "globex", Role: auth.RoleAdmin}
)

// Clock is a clock that moves only when the test moves it. Its Now is
// what a Config's Now field takes. Safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock that reads now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// New returns an Intake configured by cfg over db, with the event log on
// db's pool and the role authorizer, as the gateway builds it. It fails
// the test if cfg is refused.
func New(t testing.TB, db *weftest.DB, cfg intake.Config) *intake.Intake {
	t.Helper()
	log := eventlog.New(db.Pool)
	in, err := intake.New(db.Pool, log, journal.New(log), auth.RoleAuthorizer{}, cfg)
	require.NoError(t, err)
	return in
}

// RequireRefused requires err to be an *intake.Error with code and, when
// field is not empty, with field as its details' "field". It returns the
// refusal, as a value so that a caller need not check it.
func RequireRefused(t testing.TB, err error, code, field string) intake.Error {
	t.Helper()
	e, ok := errors.AsType[*intake.Error](err)
	require.True(t, ok, "want a refusal %s, got %v", code, err)
	require.Equal(t, code, e.Code, e.Message)
	if field != "" {
		require.Equal(t, field, e.Details["field"], e.Message)
	}
	return *e
}
