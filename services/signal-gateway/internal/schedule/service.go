package schedule

import (
	"cmp"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// Defaults applied to a zero Config field.
const (
	DefaultPollInterval    = time.Second
	DefaultLease           = 30 * time.Second
	DefaultBatch           = 100
	DefaultMisfireGrace    = time.Minute
	DefaultMaxCatchupLimit = 100
	DefaultMaxScan         = 100_000
	DefaultMaxInputBytes   = 64 << 10
	DefaultMaxPerTenant    = 1000
)

// Config tunes schedules. The zero value of each field means its default.
type Config struct {
	// PollInterval is how often the scheduler looks for due schedules.
	PollInterval time.Duration
	// Lease is how long a claim keeps other schedulers off a schedule: a
	// scheduler that dies after claiming delays its fire by at most this.
	// It must exceed the time a fire takes.
	Lease time.Duration
	// Batch is how many due schedules one claim takes.
	Batch int
	// MisfireGrace is how late a fire time may be fired and still count
	// as on time; an older one is a misfire. At least PollInterval.
	MisfireGrace time.Duration
	// MaxCatchupLimit is the largest maxCatchup a schedule may set.
	MaxCatchupLimit int
	// MaxInputBytes bounds a schedule's input (its JSON text). The run's
	// input adds the fire's keys to it (api.ScheduleFireInput) and must
	// also fit the gateway's limit of run inputs.
	MaxInputBytes int
	// MaxScan bounds the fire times one decision walks (a per-minute
	// schedule down for a long time); beyond it missed fire times are
	// dropped uncounted.
	MaxScan int
	// MaxPerTenant is the quota of schedules one tenant may have: a
	// create past it is refused with CodeQuotaExceeded and writes
	// nothing; deleting one makes room. Creates of one tenant are counted
	// under a transaction-scoped advisory lock, so concurrent creates,
	// from any number of gateways, never pass it together.
	MaxPerTenant int
	// Now is the clock; nil means time.Now. Tests move it.
	Now func() time.Time
	// MeterProvider receives weft.gateway.schedule.fires and
	// weft.gateway.schedule.skipped; nil records nothing.
	MeterProvider metric.MeterProvider
}

func (c Config) withDefaults() Config {
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	c.MisfireGrace = cmp.Or(c.MisfireGrace, DefaultMisfireGrace)
	c.MaxCatchupLimit = cmp.Or(c.MaxCatchupLimit, DefaultMaxCatchupLimit)
	c.MaxScan = cmp.Or(c.MaxScan, DefaultMaxScan)
	c.MaxInputBytes = cmp.Or(c.MaxInputBytes, DefaultMaxInputBytes)
	c.MaxPerTenant = cmp.Or(c.MaxPerTenant, DefaultMaxPerTenant)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.PollInterval < 0, c.Lease < 0, c.Batch < 0, c.MisfireGrace < 0, c.MaxCatchupLimit < 0, c.MaxScan < 0, c.MaxInputBytes < 0, c.MaxPerTenant < 0:
		return errors.New("schedule: config values must not be negative")
	case c.MisfireGrace < c.PollInterval:
		return errors.New("schedule: the misfire grace must be at least the poll interval")
	}
	return nil
}

// Service keeps schedules (create, update, pause, resume, delete, list)
// and fires them (Run, Tick). Safe for concurrent use.
type Service struct {
	pool    *pgxpool.Pool
	intake  *intake.Intake
	plans   intake.PlanResolver // nil: a schedule by planRef is refused
	authz   auth.Authorizer
	cfg     Config
	logger  *slog.Logger
	metrics *fireMetrics // nil without a MeterProvider
}

// New returns the schedules of pool, starting runs and sending signals
// through in, resolving the planRefs of schedules with plans (nil refuses
// every planRef) and deciding what callers may do with authz.
func New(pool *pgxpool.Pool, in *intake.Intake, plans intake.PlanResolver, authz auth.Authorizer, cfg Config,
	logger *slog.Logger) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newFireMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	return &Service{pool: pool, intake: in, plans: plans, authz: authz, cfg: cfg, logger: logger, metrics: m}, nil
}

// now is the clock in UTC at Postgres's microsecond precision.
func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }
