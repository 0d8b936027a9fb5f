package readapi

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/pkg/eventlog"
)

// The read API's page bounds (docs/read-api.md).
const (
	// DefaultListLimit and MaxListLimit are GET /v1/runs's page size
	// without a limit, and its largest.
	DefaultListLimit = 50
	MaxListLimit     = 200
	// DefaultEventsLimit and MaxEventsLimit are GET
	// /v1/runs/{runId}/events's page size without a limit, and its largest.
	DefaultEventsLimit = 100
	MaxEventsLimit     = 1000
)

// Projection is what the read API needs of the projection that fills its
// pool: word of each run's changes, for the long polls, and how far the
// pool is behind the primary. Its methods are safe for concurrent use.
type Projection interface {
	// Wait returns a channel closed at the next committed change of run
	// runID that the read pool already shows, and a function that stops
	// waiting, to be called once the caller is done whether or not the
	// channel closed. A change may also be one that never came (the
	// reread finds the run as it was): the caller reads the run again.
	Wait(runID string) (changed <-chan struct{}, stop func())
	// ReadLag is the read pool's replay lag behind the primary, which the
	// runs' lagMs include: 0 when it reads the primary.
	ReadLag() time.Duration
}

// Config is what the read API serves with. The projector fills it from
// its own Config (projector.Config documents each field), with its
// defaults applied and checked: New refuses a Config without Keys or
// Authorizer, or with a limit that is not positive.
type Config struct {
	// Keys authenticate the readers' bearer tokens; Authorizer decides
	// what a key may read.
	Keys       *auth.Keys
	Authorizer auth.Authorizer
	// GatewayURL, an http or https URL with a host, is where the UI's
	// gateway calls go; empty, they answer 503.
	GatewayURL string
	// DevTokenFile is the file the UI's sign-in form names, if any.
	DevTokenFile string
	// MaxWait caps a long poll's timeout; WaitRecheck is how often a long
	// poll rereads its run with no word of a change.
	MaxWait, WaitRecheck time.Duration
	// MaxLongPollsPerKey caps each key's long polls in flight
	// (keylimit.NewConcurrency); KeyRate is each key's request rate.
	MaxLongPollsPerKey int
	KeyRate            keylimit.Limit
	// StepsPerToken is the steps an answer holds for each request token
	// it costs; MaxChildrenPage caps a page of a forEach step's children.
	StepsPerToken, MaxChildrenPage int
	// SnapshotCacheSteps bounds the snapshot cache (snapcache.go); not
	// positive, the cache is off.
	SnapshotCacheSteps int
	// Logger receives the read API's logs. Nil discards them.
	Logger *slog.Logger
	// Meter receives the read API's instruments (metrics.go). Nil
	// records nothing.
	Meter metric.Meter
	// LongPollWaiting, a hook for tests, runs each time a long poll has
	// read its run and starts waiting for a change.
	LongPollWaiting func()
}

// API is the projector's read API and UI over HTTP (Handler). Safe for
// concurrent use.
type API struct {
	cfg Config
	// read and readLog are the pool the API reads, and the event log on it.
	read    *pgxpool.Pool
	readLog *eventlog.Store
	feed    Projection
	logger  *slog.Logger
	metrics metrics
	// longPolls caps each key's long polls in flight; rate its requests.
	longPolls *keylimit.Concurrency
	rate      *keylimit.Limiter
	// snaps caches decoded snapshots; nil: off.
	snaps *snapCache
}

// New returns the read API over read (run_snapshots, projector_alerts)
// and readLog (the event log, on the same pool), woken by feed.
func New(read *pgxpool.Pool, readLog *eventlog.Store, feed Projection, cfg Config) (*API, error) {
	switch {
	case read == nil || readLog == nil || feed == nil:
		return nil, errors.New("projector: the read API needs a pool, its event log and a projection")
	case cfg.Keys == nil || cfg.Authorizer == nil:
		return nil, errors.New("projector: the read API needs Keys and an Authorizer")
	case cfg.MaxWait <= 0 || cfg.WaitRecheck <= 0 || cfg.StepsPerToken < 1 || cfg.MaxChildrenPage < 1:
		return nil, errors.New("projector: the read API's MaxWait, WaitRecheck, StepsPerToken and MaxChildrenPage must be positive")
	}
	rate, err := keylimit.New(keylimit.Config{Limit: cfg.KeyRate})
	if err != nil {
		return nil, fmt.Errorf("projector: KeyRate: %w", err)
	}
	m, err := newMetrics(cfg.Meter)
	if err != nil {
		return nil, fmt.Errorf("projector: metrics: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &API{cfg: cfg, read: read, readLog: readLog, feed: feed, logger: logger, metrics: m,
		longPolls: keylimit.NewConcurrency(cfg.MaxLongPollsPerKey), rate: rate,
		snaps: newSnapCache(cfg.SnapshotCacheSteps)}, nil
}
