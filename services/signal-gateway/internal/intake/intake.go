// Package intake takes runs and signals into Weft: the signal gateway's
// transports (REST, JSON-RPC, NATS) decode a request and hand it here, and
// intake checks it, decides with the caller's principal, and commits it in
// one Postgres transaction with its outbox rows, or commits nothing.
//
// Starts are idempotent on the run-request tuple (execution-semantics §3)
// and signals on (runId, signalName, signalId) (tier0 contract, "Signal
// Idempotency"): a repeat gets the first answer and writes nothing. Every
// refusal is an *Error carrying a pkg/api error code, which each transport
// renders in its own shape.
package intake

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
)

// Defaults applied to a zero Config field.
const (
	DefaultSignalRetention        = 24 * time.Hour
	DefaultRunRequestRetention    = 7 * 24 * time.Hour
	DefaultMaxSignalPayloadBytes  = 64 << 10 // execution-semantics §6
	DefaultMaxSignalsPerRunMinute = 60       // execution-semantics §6
	DefaultMaxRunInputBytes       = 256 << 10
	DefaultSignalRejectedWindow   = RateWindow
)

// RateWindow is the window of the per-run signal limit.
const RateWindow = time.Minute

// Config tunes intake. The zero value of each field means its default.
type Config struct {
	// SignalRetention is how long an accepted signal's record answers
	// repeats of its (runId, signalName, signalId). At least RateWindow.
	SignalRetention time.Duration
	// RunRequestRetention is how long a run request's record answers
	// repeats of its tuple.
	RunRequestRetention time.Duration
	// MaxSignalPayloadBytes bounds a signal's payload (its JSON text).
	MaxSignalPayloadBytes int
	// MaxSignalsPerRunMinute bounds the signals one run accepts in any
	// RateWindow. Denied signals count against it too, for denied
	// callers only: once a run's acceptances and denials in the current
	// RateWindow (denials counted by this gateway) reach it, a signal its
	// principal may not send is refused with CodeRateLimited, and nothing
	// is recorded; a signal its principal may send is limited by
	// acceptances alone, so a key that may not signal cannot use up the
	// budget of those that may.
	MaxSignalsPerRunMinute int
	// SignalRejectedWindow bounds the SignalRejected events denied
	// signals write: at most one per API key and run in each window of
	// this length (aligned on the zero time); the other denials of the
	// window are refused alike, and only counted
	// (Error.Denial = DenialUnrecorded).
	SignalRejectedWindow time.Duration
	// MaxRunInputBytes bounds a run's input document (its JSON text).
	MaxRunInputBytes int
	// Plans bounds the plans a start may carry.
	Plans plan.Limits
	// Admission is the backpressure policy of each environment.
	Admission admission.Limits
	// Now is the clock; nil means time.Now. Tests move it.
	Now func() time.Time
	// Logger tells of writes tried again after a lost database
	// connection; nil discards.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.SignalRetention = cmp.Or(c.SignalRetention, DefaultSignalRetention)
	c.RunRequestRetention = cmp.Or(c.RunRequestRetention, DefaultRunRequestRetention)
	c.MaxSignalPayloadBytes = cmp.Or(c.MaxSignalPayloadBytes, DefaultMaxSignalPayloadBytes)
	c.MaxSignalsPerRunMinute = cmp.Or(c.MaxSignalsPerRunMinute, DefaultMaxSignalsPerRunMinute)
	c.SignalRejectedWindow = cmp.Or(c.SignalRejectedWindow, DefaultSignalRejectedWindow)
	c.MaxRunInputBytes = cmp.Or(c.MaxRunInputBytes, DefaultMaxRunInputBytes)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Intake takes runs and signals in. Safe for concurrent use.
type Intake struct {
	pool     *pgxpool.Pool
	log      *eventlog.Store
	journal  *journal.Journal
	authz    auth.Authorizer
	approver runstart.Approver
	cfg      Config
	// plans remembers the plans of earlier starts, validated: a plan
	// started again is not parsed again.
	plans   *plan.Cache
	groups  grouper[*call]
	starts  grouper[*startCall]
	denials denialCounter
}

// New returns an Intake reading the event log log, writing to it through
// j (with outbox rows), and to pool, deciding with authz. It rejects a
// Config whose retention is shorter than RateWindow, since the rate limit
// counts retained records.
func New(pool *pgxpool.Pool, log *eventlog.Store, j *journal.Journal, authz auth.Authorizer, cfg Config) (*Intake, error) {
	cfg = cfg.withDefaults()
	if cfg.SignalRetention < RateWindow {
		return nil, fmt.Errorf("intake: signal retention %v is shorter than the rate window %v", cfg.SignalRetention, RateWindow)
	}
	if cfg.MaxSignalPayloadBytes < 0 || cfg.MaxSignalsPerRunMinute < 0 || cfg.MaxRunInputBytes < 0 || cfg.SignalRejectedWindow < 0 {
		return nil, errors.New("intake: limits must not be negative")
	}
	in := &Intake{
		pool: pool, log: log, journal: j, authz: authz, cfg: cfg,
		approver: runstart.Approver{Journal: j, Admission: cfg.Admission},
		plans:    plan.NewCache(cfg.Plans, 0),
	}
	in.groups.decide = in.decideGroup
	in.starts.decide = in.startGroup
	return in, nil
}

// Config returns the configuration in force, defaults applied.
func (in *Intake) Config() Config { return in.cfg }
