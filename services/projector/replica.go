package projector

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/pkg/periodic"
)

// Reads from a standby (Config.ReadPool). A hot standby shows the
// primary's data as of the WAL it has replayed, so what the read API
// answers from it is older than the primary's snapshots by the standby's
// replay lag. The projector measures that lag (replayLag), adds it to the
// projection lag it reports (the API's lagMs, the weft.projector.lag
// histogram and so PROJECTOR_LAG_HIGH) and reports it on its own, as the
// gauge weft.projector.read_replica.lag. The lag that decides a run's
// resync (Config.ResyncLag) and the lag_ms stored with a snapshot stay the
// primary's: reading the log again does not make a standby replay faster.
//
// The measure. Every ReplicaLagEvery the projector reads the primary's
// flushed WAL position (pg_current_wal_flush_lsn(): the standby cannot be
// sent more) and notes when it read it, then reads the standby's
// replayed position (pg_last_wal_replay_lsn()). The lag is how long ago
// the projector first saw a primary position the standby has still not
// replayed: 0 when the standby has replayed all the primary had flushed
// at the last reading, whatever the time since the last commit (an idle
// primary does not make it grow, as now() - pg_last_xact_replay_timestamp()
// would), and growing with the time while replay is stopped or behind.
// It is a lower bound, exact to within ReplicaLagEvery (WAL flushed just
// after a reading is first seen at the next one), and it reads one clock,
// the projector's, so the hosts' clocks do not enter it. A server that is
// not in recovery (ReadPool on a primary) has no replay lag: 0.

// DefaultReplicaLagEvery is the default of Config.ReplicaLagEvery.
const DefaultReplicaLagEvery = time.Second

const (
	// flushLSNSQL reads the primary's flushed WAL position, in bytes.
	flushLSNSQL = `SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint`
	// replayLSNSQL reads a standby's replayed WAL position, in bytes: NULL
	// on a server that is not in recovery.
	replayLSNSQL = `SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint`
	// maxLagSamples bounds replayLag's readings: past it every other one
	// is dropped, so a standby hours behind is measured more coarsely, not
	// forgotten (at 1 s readings, 4,096 cover an hour at full resolution).
	maxLagSamples = 4096
)

// flushLSN returns the primary's flushed WAL position.
func flushLSN(ctx context.Context, primary *pgxpool.Pool) (int64, error) {
	var lsn int64
	if err := primary.QueryRow(ctx, flushLSNSQL).Scan(&lsn); err != nil {
		return 0, fmt.Errorf("projector: read the primary's WAL position: %w", err)
	}
	return lsn, nil
}

// replayLSN returns the standby's replayed WAL position; standby is false
// when the server is not in recovery (it has the primary's data, or its
// own: it has no replay to wait for).
func replayLSN(ctx context.Context, read *pgxpool.Pool) (lsn int64, standby bool, err error) {
	var v *int64
	if err := read.QueryRow(ctx, replayLSNSQL).Scan(&v); err != nil {
		return 0, false, fmt.Errorf("projector: read the standby's replay position: %w", err)
	}
	if v == nil {
		return 0, false, nil
	}
	return *v, true, nil
}

// lsnSample is a primary WAL position and when the projector read it.
type lsnSample struct {
	lsn int64
	at  time.Time
}

// replayLag measures the ReadPool's replay lag. lag is safe for
// concurrent use; observe and measure belong to one goroutine (loop).
type replayLag struct {
	primary, read *pgxpool.Pool
	// samples are the primary positions read that the standby had not
	// replayed at the last measure, oldest first, positions increasing.
	samples []lsnSample
	ns      atomic.Int64 // the last measure
}

// lag returns the last measure: 0 before the first, and on a server not
// in recovery.
func (l *replayLag) lag() time.Duration { return time.Duration(l.ns.Load()) }

// observe records a reading of the primary's position and the standby's
// replayed position at now, and returns the replay lag: now minus when
// the oldest primary position the standby has not replayed was read, 0
// when it has replayed them all.
func (l *replayLag) observe(primary lsnSample, replayed int64, now time.Time) time.Duration {
	n := len(l.samples)
	switch {
	case n > 0 && primary.lsn < l.samples[n-1].lsn: // another primary (a failover, a new URL): start again
		l.samples = append(l.samples[:0], primary)
	case n == 0 || primary.lsn > l.samples[n-1].lsn:
		if n >= maxLagSamples {
			l.samples = thin(l.samples)
		}
		l.samples = append(l.samples, primary)
	}
	k := 0
	for k < len(l.samples) && l.samples[k].lsn <= replayed {
		k++
	}
	l.samples = append(l.samples[:0], l.samples[k:]...)
	if len(l.samples) == 0 {
		return 0
	}
	return max(0, now.Sub(l.samples[0].at))
}

// thin keeps the first sample and every other one after it.
func thin(s []lsnSample) []lsnSample {
	out := s[:1]
	for i := 2; i < len(s); i += 2 {
		out = append(out, s[i])
	}
	return out
}

// measure reads both positions and stores the new measure.
func (l *replayLag) measure(ctx context.Context) error {
	p, err := flushLSN(ctx, l.primary)
	if err != nil {
		return err
	}
	sample := lsnSample{lsn: p, at: time.Now()}
	replayed, standby, err := replayLSN(ctx, l.read)
	if err != nil {
		return err
	}
	if !standby {
		l.samples = l.samples[:0]
		l.ns.Store(0)
		return nil
	}
	l.ns.Store(int64(l.observe(sample, replayed, time.Now())))
	return nil
}

// replicaLagLoop measures the replay lag every ReplicaLagEvery until ctx
// ends. A failed reading is logged and keeps the last measure.
func (s *Service) replicaLagLoop(ctx context.Context) {
	loop := periodic.Loop{Interval: s.cfg.ReplicaLagEvery, Immediate: true, Logger: s.logger,
		Failed: "projector: read replica lag not measured"}
	loop.Run(ctx, s.replica.measure)
}

// replicaLag is the lag the read API's answers add to the primary's
// projection lag: the ReadPool's replay lag, 0 without one.
func (s *Service) replicaLag() time.Duration {
	if s.replica == nil {
		return 0
	}
	return s.replica.lag()
}

// registerReplicaGauge registers weft.projector.read_replica.lag (seconds,
// Prometheus weft_projector_read_replica_lag_seconds): the last measure of
// the ReadPool's replay lag. Serve calls it only with a ReadPool.
func (s *Service) registerReplicaGauge() (metric.Registration, error) {
	m := s.metrics.meter
	g, err := m.Float64ObservableGauge("weft.projector.read_replica.lag", metric.WithUnit("s"),
		metric.WithDescription("Replay lag of the standby the read API reads (--read-database-url), "+
			"added to the projection lag the API reports; to within the measure's period."))
	if err != nil {
		return nil, fmt.Errorf("projector: metrics: %w", err)
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveFloat64(g, s.replica.lag().Seconds())
		return nil
	}, g)
	if err != nil {
		return nil, fmt.Errorf("projector: metrics: %w", err)
	}
	return reg, nil
}
