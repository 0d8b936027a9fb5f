// Package metrictest reads the OpenTelemetry metrics a test's
// ManualReader collected, so that a test can wait for or assert on an
// instrument's value.
package metrictest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Provider returns a meter provider and the reader that collects it.
func Provider() (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), reader
}

// Collect reads every metric reader holds now.
func Collect(t testing.TB, reader *sdkmetric.ManualReader) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm))
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out
}

// Sum adds the int64 data points of the counter or up-down counter name
// whose attributes hold every key, value pair of attrs (all of them when
// attrs is empty); 0 when there are none.
func Sum(t testing.TB, reader *sdkmetric.ManualReader, name string, attrs ...string) int64 {
	t.Helper()
	require.Zero(t, len(attrs)%2, "attrs are key, value pairs")
	var n int64
	for _, m := range Collect(t, reader) {
		sum, ok := m.Data.(metricdata.Sum[int64])
		if m.Name != name || !ok {
			continue
		}
		for _, dp := range sum.DataPoints {
			if matches(dp, attrs) {
				n += dp.Value
			}
		}
	}
	return n
}

func matches(dp metricdata.DataPoint[int64], attrs []string) bool {
	for i := 0; i < len(attrs); i += 2 {
		if v, ok := dp.Attributes.Value(attribute.Key(attrs[i])); !ok || v.AsString() != attrs[i+1] {
			return false
		}
	}
	return true
}
