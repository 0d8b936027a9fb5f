package gateway

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// meterName is the instrumentation scope of the gateway's metrics.
const meterName = "github.com/weftrun/weft/services/signal-gateway"

// Transport attribute values.
const (
	transportHTTP    = "http"
	transportJSONRPC = "jsonrpc"
	transportNATS    = "nats"
)

// Outcome attribute values of weft.gateway.signals.
const (
	signalAccepted  = "accepted"  // a new SignalAccepted was committed
	signalDuplicate = "duplicate" // a repeat of an accepted (run, name, id): answered, nothing written
	signalRejected  = "rejected"  // refused with an error code (denied, rate limited, not found, …)
	signalError     = "error"     // failed without a refusal (database down): the caller retries
)

// signalMetrics counts the signals and trigger events that reach intake,
// nil without a MeterProvider (the events the gateway appends are counted
// by the journal, weft.events.appended; schedule fires by
// internal/schedule):
//
//	weft.gateway.signals         counter {signal}  by outcome and transport
//	weft.gateway.trigger.events  counter {event}   by outcome and transport
//	weft.gateway.ingress.dropped counter {message} NATS requests dropped for a reply subject that is not an inbox
//	weft.gateway.signal.denials  counter {signal}  signals their key may not send, by outcome
//	                                               (recorded, unrecorded, rate_limited; intake.Error.Denial)
//	weft.gateway.limit.refusals  counter {request} requests refused by a named limit, by limit (key_rate,
//	                                               schedule_quota, trigger_quota; intake.Error.Limit) and transport
//
// For a trigger event, accepted means it started a run. A request refused
// before intake (unauthenticated, undecodable) is not counted.
type signalMetrics struct {
	signals, events, dropped, denials metric.Int64Counter
	refusals                          metric.Int64Counter
	opts                              map[[2]string]metric.AddOption // (outcome, transport)
	denialOpts                        map[string]metric.AddOption    // by intake.Error.Denial
	limitOpts                         map[[2]string]metric.AddOption // (limit, transport)
}

func newSignalMetrics(mp metric.MeterProvider) (*signalMetrics, error) {
	if mp == nil {
		return nil, nil
	}
	c, err := mp.Meter(meterName).Int64Counter("weft.gateway.signals", metric.WithUnit("{signal}"),
		metric.WithDescription("Signals sent to the gateway, by outcome (accepted, duplicate, rejected, error) and transport."))
	if err != nil {
		return nil, fmt.Errorf("gateway: metrics: %w", err)
	}
	ev, err := mp.Meter(meterName).Int64Counter("weft.gateway.trigger.events", metric.WithUnit("{event}"),
		metric.WithDescription("Events sent to triggers, by outcome (accepted: a run started, duplicate, rejected, error) and transport."))
	if err != nil {
		return nil, fmt.Errorf("gateway: metrics: %w", err)
	}
	dropped, err := mp.Meter(meterName).Int64Counter("weft.gateway.ingress.dropped", metric.WithUnit("{message}"),
		metric.WithDescription("NATS requests dropped unhandled because their reply subject is not an inbox (Config.ReplyPrefixes)."))
	if err != nil {
		return nil, fmt.Errorf("gateway: metrics: %w", err)
	}
	denials, err := mp.Meter(meterName).Int64Counter("weft.gateway.signal.denials", metric.WithUnit("{signal}"),
		metric.WithDescription("Signals their API key may not send, by outcome: recorded as SignalRejected, unrecorded (the key's SignalRejected of the run and window was in the log), rate_limited."))
	if err != nil {
		return nil, fmt.Errorf("gateway: metrics: %w", err)
	}
	refusals, err := mp.Meter(meterName).Int64Counter("weft.gateway.limit.refusals", metric.WithUnit("{request}"),
		metric.WithDescription("Requests refused by a named limit, by limit (key_rate: the API key's request rate; schedule_quota, trigger_quota: the tenant's quota) and transport."))
	if err != nil {
		return nil, fmt.Errorf("gateway: metrics: %w", err)
	}
	m := &signalMetrics{signals: c, events: ev, dropped: dropped, denials: denials, refusals: refusals,
		opts: make(map[[2]string]metric.AddOption), denialOpts: make(map[string]metric.AddOption),
		limitOpts: make(map[[2]string]metric.AddOption)}
	for _, l := range []string{intake.LimitKeyRate, intake.LimitScheduleQuota, intake.LimitTriggerQuota} {
		for _, tr := range []string{transportHTTP, transportJSONRPC, transportNATS} {
			m.limitOpts[[2]string{l, tr}] = metric.WithAttributeSet(attribute.NewSet(
				attribute.String("limit", l), attribute.String("transport", tr)))
		}
	}
	for _, d := range []string{intake.DenialRecorded, intake.DenialUnrecorded, intake.DenialRateLimited} {
		m.denialOpts[d] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", d)))
	}
	for _, o := range []string{signalAccepted, signalDuplicate, signalRejected, signalError} {
		for _, tr := range []string{transportHTTP, transportJSONRPC, transportNATS} {
			m.opts[[2]string{o, tr}] = metric.WithAttributeSet(attribute.NewSet(
				attribute.String("outcome", o), attribute.String("transport", tr)))
		}
	}
	return m, nil
}

// signalSend hands sig to intake and counts its outcome under transport.
func (s *Service) signalSend(ctx context.Context, transport string, p auth.Principal, sig intake.Signal) (intake.SignalResult, error) {
	res, err := s.intake.SignalSend(ctx, p, sig)
	if m := s.metrics; m != nil {
		m.signals.Add(ctx, 1, m.opts[[2]string{signalOutcome(res, err), transport}])
		if e, ok := errors.AsType[*intake.Error](err); ok && e.Denial != "" {
			m.denials.Add(ctx, 1, m.denialOpts[e.Denial])
		}
	}
	return res, err
}

func signalOutcome(res intake.SignalResult, err error) string {
	if _, refused := errors.AsType[*intake.Error](err); refused {
		return signalRejected
	}
	switch {
	case err != nil:
		return signalError
	case res.Duplicate:
		return signalDuplicate
	}
	return signalAccepted
}
