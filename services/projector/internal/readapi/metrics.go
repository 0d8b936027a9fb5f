package readapi

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// metrics are the read API's instruments, on the projector's meter
// (Config.Meter):
//
//	weft.projector.requests.refused counter        read API requests refused with 429, by reason
//	weft.projector.longpolls.open   up-down counter long polls held open
type metrics struct {
	refused metric.Int64Counter
	polls   metric.Int64UpDownCounter
}

// The reasons of weft.projector.requests.refused.
const (
	// refusedRate: the key is over its request rate (Config.KeyRate).
	refusedRate = "key_rate"
	// refusedLongPolls: the key holds MaxLongPollsPerKey long polls.
	refusedLongPolls = "key_long_polls"
)

func newMetrics(m metric.Meter) (metrics, error) {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	var ms metrics
	var err error
	if ms.refused, err = m.Int64Counter("weft.projector.requests.refused",
		metric.WithDescription("Read API requests refused with 429 before any query, by reason: key_rate or key_long_polls.")); err != nil {
		return ms, err
	}
	ms.polls, err = m.Int64UpDownCounter("weft.projector.longpolls.open",
		metric.WithDescription("Long polls (waitForSeq) held open."))
	return ms, err
}
