package projector

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/services/projector/internal/readapi"
)

// Defaults applied to a zero Config field.
//
// DefaultConcurrency is one shard: a batch's cost is mostly its own (a
// transaction of two round trips, the prelude, the lock and check of its
// runs), so while a batch runs the next one should grow rather than start
// beside it; one shard drains a backlog as fast as several, at less CPU a
// run (BENCHMARKS.md). More projectors share the consumer to scale out.
const (
	DefaultAddr           = ":8081"
	DefaultConcurrency    = 1
	DefaultMaxBatch       = 256
	DefaultBatchLinger    = 100 * time.Millisecond
	MaxBatchLinger        = time.Second
	DefaultAckWait        = 30 * time.Second
	DefaultRetryDelay     = time.Second
	DefaultLagAlert       = 5 * time.Second  // execution-semantics §1.5: P2 above 5 s
	DefaultResyncLag      = 10 * time.Second // state-store contract §5.2: resync above 10 s
	DefaultResyncEvery    = 2 * time.Second
	DefaultResyncScan     = 5000
	DefaultMaxWait        = 60 * time.Second
	DefaultForgedAlertFor = time.Hour
	DefaultFetchPage      = 500
	DefaultWaitRecheck    = 30 * time.Second
	defaultResyncRunsMax  = 100
)

// The read API's page bounds (docs/read-api.md), which internal/readapi
// holds.
const (
	DefaultListLimit   = readapi.DefaultListLimit
	MaxListLimit       = readapi.MaxListLimit
	DefaultEventsLimit = readapi.DefaultEventsLimit
	MaxEventsLimit     = readapi.MaxEventsLimit
	// MaxStepEvents caps the events GET /v1/runs/{runId}/steps/{stepId}
	// reads of one step.
	MaxStepEvents = readapi.MaxStepEvents
	// DefaultChildrenLimit is the page size of GET
	// /v1/runs/{runId}/steps/{stepId}/children without a limit.
	DefaultChildrenLimit = readapi.DefaultChildrenLimit
)

// Alert is one active alert of GET /v1/alerts (internal/readapi).
type Alert = readapi.Alert

// Whoami is the answer of GET /v1/whoami (internal/readapi).
type Whoami = readapi.Whoami

// The read API's cost bounds (docs/read-api.md, "Limits per key").
const (
	// DefaultMaxChildrenPage is the largest page of a forEach step's
	// children (…/children?limit=) a zero MaxChildrenPage allows.
	DefaultMaxChildrenPage = 1000
	// DefaultStepsPerToken is the steps a read may answer for its one
	// request token under a zero StepsPerToken.
	DefaultStepsPerToken = 100
	// DefaultSnapshotCacheSteps is the steps a zero SnapshotCacheSteps
	// lets the snapshot cache hold: five runs of 10,000 children, some
	// tens of MB.
	DefaultSnapshotCacheSteps = 50_000
)

// Consumer is the durable JetStream consumer every projector shares.
const Consumer = "projector"

// Config tunes the projector. The zero value of each field means its
// default; Keys is required.
type Config struct {
	// Addr is the read API's and UI's listen address.
	Addr string
	// Keys are the API keys readers present as bearer tokens (the
	// gateway's keys).
	Keys *auth.Keys
	// Authorizer decides what a key may read; nil means auth.RoleAuthorizer.
	Authorizer auth.Authorizer
	// GatewayURL is where the UI's signals are forwarded
	// (/gateway/v1/runs/{runId}/signals). Empty: those requests answer 503.
	GatewayURL string
	// DevTokenFile is set by `weft dev` only: the file that holds the dev
	// stack's API key (.weft/dev/token), which the UI's sign-in form names.
	// Empty, for any other stack, the form names no file.
	DevTokenFile string
	// Concurrency is the number of shards applying events in parallel
	// (internal/bus/shards); a run's events always go to the same shard.
	Concurrency int
	// MaxBatch bounds the messages one transaction applies.
	MaxBatch int
	// BatchLinger is how long a shard with fewer than MaxBatch messages
	// waiting waits for more before it applies them (shards.Linger): under
	// a light load a run's rounds, and many runs, share one transaction and
	// one snapshot write. It adds up to BatchLinger to projection lag, not
	// to runs. Default 100ms, a tenth of the projection lag objective (1 s,
	// execution-semantics-v1 §1.4); a negative value applies what is waiting at
	// once; at most MaxBatchLinger.
	BatchLinger time.Duration
	// AckWait is the consumer's ack wait; RetryDelay is the delay before a
	// batch whose transaction failed is redelivered.
	AckWait, RetryDelay time.Duration
	// LagAlert is the projection lag above which PROJECTOR_LAG_HIGH is
	// raised; it clears when lag falls back under it.
	LagAlert time.Duration
	// ResyncLag is the lag above which a run catches up from the log
	// instead of the bus, and after which the resync loop looks at a run
	// whose snapshot is behind its log.
	ResyncLag time.Duration
	// ResyncEvery is how often the resync loop retries stale runs and
	// looks for runs whose snapshot is behind the log.
	ResyncEvery time.Duration
	// ResyncScan is how many runs not yet ended the resync loop checks
	// against their log's head per pass: with more open runs than that
	// (runs parked on a signal), a pass checks the next ResyncScan and a
	// snapshot behind its log is found within ResyncLag plus
	// ceil(open runs / ResyncScan) × ResyncEvery. It bounds each pass's
	// work whatever the number of open runs.
	ResyncScan int
	// MaxWait caps a long poll's timeout (waitForSeq).
	MaxWait time.Duration
	// WaitRecheck is how often a long poll reads its run again with no
	// notification: a safety net, as commits wake long polls through
	// Postgres LISTEN/NOTIFY (listen.go).
	WaitRecheck time.Duration
	// MaxLongPollsPerKey caps the long polls one API key holds open at
	// once; the next one is refused with 429 before any query. Zero means
	// keylimit.DefaultMaxInFlight (100); negative, no cap.
	MaxLongPollsPerKey int
	// KeyRate is the read API's request rate per API key (list, get, long
	// polls, events, alerts): past it a request is refused with 429 and
	// Retry-After before any query. The zero value means keylimit's
	// defaults (100/s, burst 200); keylimit.Off turns it off.
	KeyRate keylimit.Limit
	// StepsPerToken weights KeyRate by the work a read does: an answer of
	// steps (GET /v1/runs/{runId}, a page of …/children) costs its key one
	// request token for each StepsPerToken steps it holds, so one of
	// 10,001 steps costs 101 at the default of 100, and a key reading big
	// answers is refused (429, Retry-After) that much sooner. The tokens
	// past the first are taken once the read knows its answer, before it
	// is sent. Zero means DefaultStepsPerToken.
	StepsPerToken int
	// MaxChildrenPage caps the limit of a page of a forEach step's
	// children; a larger one is refused with 400 (details.field "limit").
	// Zero means DefaultMaxChildrenPage.
	MaxChildrenPage int
	// SnapshotCacheSteps bounds the snapshot cache: decoded snapshots of
	// runs read recently, weighed by their step count, so that reading a
	// run whose row has not changed costs no transfer or decoding of its
	// snapshot (snapcache.go). Zero means DefaultSnapshotCacheSteps;
	// negative turns the cache off.
	SnapshotCacheSteps int
	// ForgedAlertFor is how long a run's PROJECTOR_FORGED_EVENT alert stays
	// active after the last bus message the log refuted.
	ForgedAlertFor time.Duration
	// HTTP holds the server's timeouts; WriteTimeout is raised to cover
	// MaxWait.
	HTTP httpserve.Limits
	// Logger receives the projector's logs. Nil discards them.
	Logger *slog.Logger
	// MeterProvider receives the projector's metrics (lag, events
	// applied, resyncs, rebuilds, the snapshot gauges) and its consumer's.
	// Nil records nothing.
	MeterProvider metric.MeterProvider
	// TracerProvider traces the projection of each bus message: a span
	// parented to the trace context in the message's headers, covering the
	// batch transaction that applies it. Nil traces nothing.
	TracerProvider trace.TracerProvider
	// ReadPool, when set, serves the read API's queries (GET /v1/…: runs,
	// the list, events, steps, alerts) in place of the primary pool New is
	// given: a pool on a hot standby that streams the primary's WAL
	// (physical replication). Everything that writes (snapshots, alerts
	// raised and cleared, notifications), the consumer, the resync and
	// rebuild loops, the gauges and the LISTEN for other projectors'
	// commits stay on the primary. The API's lag then
	// includes the standby's replay lag (replica.go), and a long poll is
	// woken only once the standby has replayed the change that woke it
	// (fence.go). A server that is not in recovery (a primary, a logical
	// replica) is taken to be up to date: no replay lag, no wait. Nil:
	// reads go to the primary. The caller closes it.
	ReadPool *pgxpool.Pool
	// ReplicaLagEvery is how often the ReadPool's replay lag is measured;
	// it is also the measure's resolution (replica.go).
	ReplicaLagEvery time.Duration
	// TestingKnobs are hooks for tests; production leaves them zero.
	TestingKnobs TestingKnobs
}

// TestingKnobs lets tests reach crash windows.
type TestingKnobs struct {
	// BeforeCommit runs inside a batch's transaction just before it
	// commits, with the number of runs the batch changed.
	BeforeCommit func(runs int)
	// BeforeListen runs before each attempt to connect the LISTEN for
	// other projectors' commits (listen.go); a test blocks in it to hold
	// the projector without one.
	BeforeListen func()
	// Listening runs each time that LISTEN is (re)established, after every
	// long poll was woken to recheck (with a ReadPool: queued to be woken
	// through the replay fence), with the connection's backend pid.
	Listening func(pid uint32)
	// LongPollWaiting runs each time a long poll has read its run and
	// starts waiting for a change.
	LongPollWaiting func()
	// ReplayFenced runs, with a ReadPool, each time wakeups are held
	// until the standby replays the primary's WAL up to lsn (fence.go).
	ReplayFenced func(lsn int64)
}

func (c Config) withDefaults() Config {
	c.Addr = cmp.Or(c.Addr, DefaultAddr)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.MaxBatch = cmp.Or(c.MaxBatch, DefaultMaxBatch)
	c.BatchLinger = cmp.Or(c.BatchLinger, DefaultBatchLinger) // a negative value (off) is kept
	c.AckWait = cmp.Or(c.AckWait, DefaultAckWait)
	c.RetryDelay = cmp.Or(c.RetryDelay, DefaultRetryDelay)
	c.LagAlert = cmp.Or(c.LagAlert, DefaultLagAlert)
	c.ResyncLag = cmp.Or(c.ResyncLag, DefaultResyncLag)
	c.ResyncEvery = cmp.Or(c.ResyncEvery, DefaultResyncEvery)
	c.ResyncScan = cmp.Or(c.ResyncScan, DefaultResyncScan)
	c.MaxWait = cmp.Or(c.MaxWait, DefaultMaxWait)
	c.WaitRecheck = cmp.Or(c.WaitRecheck, DefaultWaitRecheck)
	c.ForgedAlertFor = cmp.Or(c.ForgedAlertFor, DefaultForgedAlertFor)
	c.ReplicaLagEvery = cmp.Or(c.ReplicaLagEvery, DefaultReplicaLagEvery)
	c.StepsPerToken = cmp.Or(c.StepsPerToken, DefaultStepsPerToken)
	c.MaxChildrenPage = cmp.Or(c.MaxChildrenPage, DefaultMaxChildrenPage)
	c.SnapshotCacheSteps = cmp.Or(c.SnapshotCacheSteps, DefaultSnapshotCacheSteps)
	c.HTTP = c.HTTP.WithDefaults()
	c.HTTP.WriteTimeout = max(c.HTTP.WriteTimeout, c.MaxWait+10*time.Second)
	if c.Authorizer == nil {
		c.Authorizer = auth.RoleAuthorizer{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Keys == nil:
		return errors.New("projector: no API keys configured")
	case c.Concurrency < 1, c.MaxBatch < 1, c.ResyncScan < 1, c.StepsPerToken < 1, c.MaxChildrenPage < 1:
		return errors.New("projector: Concurrency, MaxBatch, ResyncScan, StepsPerToken and MaxChildrenPage must be positive")
	case c.LagAlert <= 0, c.ResyncLag <= 0, c.ResyncEvery <= 0, c.MaxWait <= 0, c.WaitRecheck <= 0, c.ForgedAlertFor <= 0,
		c.ReplicaLagEvery <= 0:
		return errors.New("projector: LagAlert, ResyncLag, ResyncEvery, MaxWait, WaitRecheck, ForgedAlertFor and ReplicaLagEvery must be positive")
	case c.BatchLinger > MaxBatchLinger:
		return fmt.Errorf("projector: BatchLinger %v is above MaxBatchLinger %v", c.BatchLinger, MaxBatchLinger)
	}
	if c.GatewayURL != "" {
		u, err := url.Parse(c.GatewayURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("projector: GatewayURL %q: want an http or https URL with a host", c.GatewayURL)
		}
	}
	return nil
}
