package schedule

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/pkg/api"
)

// meterName is the instrumentation scope of the scheduler's metrics, the
// gateway's.
const meterName = "github.com/weftrun/weft/services/signal-gateway"

// Outcome attribute values of weft.gateway.schedule.fires.
const (
	fireStarted   = "started"   // a new run
	fireDuplicate = "duplicate" // the fire's run request already had a run: nothing started
)

// fireMetrics counts what fires did, nil without a MeterProvider:
//
//	weft.gateway.schedule.fires    counter {run}   by outcome (started, duplicate)
//	weft.gateway.schedule.skipped  counter {fire}  by reason (misfire, overlap, catchup_limit, refused)
type fireMetrics struct {
	fires, skipped metric.Int64Counter
	opts           map[string]metric.AddOption // outcome or reason
}

func newFireMetrics(mp metric.MeterProvider) (*fireMetrics, error) {
	if mp == nil {
		return nil, nil
	}
	meter := mp.Meter(meterName)
	fires, err := meter.Int64Counter("weft.gateway.schedule.fires", metric.WithUnit("{run}"),
		metric.WithDescription("Schedule fires that reached the gateway's start, by outcome (started, duplicate)."))
	if err != nil {
		return nil, fmt.Errorf("schedule: metrics: %w", err)
	}
	skipped, err := meter.Int64Counter("weft.gateway.schedule.skipped", metric.WithUnit("{fire}"),
		metric.WithDescription("Schedule fire times that started no run, by reason (misfire, overlap, catchup_limit, refused)."))
	if err != nil {
		return nil, fmt.Errorf("schedule: metrics: %w", err)
	}
	m := &fireMetrics{fires: fires, skipped: skipped, opts: map[string]metric.AddOption{}}
	for _, o := range []string{fireStarted, fireDuplicate} {
		m.opts[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", o)))
	}
	for _, r := range []string{api.SkipMisfire, api.SkipOverlap, api.SkipCatchupLimit, api.SkipRefused} {
		m.opts[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
	}
	return m, nil
}

// record logs a committed fire's skips and counts its outcome.
func (s *Service) record(ctx context.Context, k Key, out outcome) {
	for _, sk := range out.skips {
		s.logger.InfoContext(ctx, "schedule fire times skipped", "tenant_id", k.TenantID, "schedule_id", k.ScheduleID,
			"reason", sk.Reason, "count", sk.Count, "from", sk.From, "to", sk.To)
	}
	m := s.metrics
	if m == nil {
		return
	}
	if out.started > 0 {
		m.fires.Add(ctx, int64(out.started), m.opts[fireStarted])
	}
	if out.duplicates > 0 {
		m.fires.Add(ctx, int64(out.duplicates), m.opts[fireDuplicate])
	}
	for _, sk := range out.skips {
		m.skipped.Add(ctx, sk.Count, m.opts[sk.Reason])
	}
}
