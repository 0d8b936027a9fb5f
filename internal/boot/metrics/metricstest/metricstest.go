// Package metricstest scrapes a metrics.New handler in tests and reads the
// series it serves, so service tests assert on what Prometheus would see.
package metricstest

import (
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Sample is one series of a scrape: its name as exposed (a histogram
// yields name_count, name_sum and name_bucket), its labels and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Scrape is every sample of one scrape.
type Scrape []Sample

// Get scrapes h once, as Prometheus would, and fails t unless it answers
// 200 with the text format.
func Get(t testing.TB, h http.Handler) Scrape {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, "scrape status; body: %s", rec.Body.String())
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	require.NoError(t, err, "scrape parses")
	var out Scrape
	for name, f := range families {
		for _, m := range f.GetMetric() {
			out = append(out, samples(name, m)...)
		}
	}
	return out
}

// samples flattens one metric into its exposed series.
func samples(name string, m *dto.Metric) []Sample {
	labels := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	one := func(n string, v float64) Sample { return Sample{Name: n, Labels: labels, Value: v} }
	switch {
	case m.Counter != nil:
		return []Sample{one(name, m.GetCounter().GetValue())}
	case m.Gauge != nil:
		return []Sample{one(name, m.GetGauge().GetValue())}
	case m.Histogram != nil:
		h := m.GetHistogram()
		out := []Sample{one(name+"_count", float64(h.GetSampleCount())), one(name+"_sum", h.GetSampleSum())}
		for _, b := range h.GetBucket() {
			bl := maps.Clone(labels)
			bl["le"] = formatFloat(b.GetUpperBound())
			out = append(out, Sample{Name: name + "_bucket", Labels: bl, Value: float64(b.GetCumulativeCount())})
		}
		return out
	case m.Untyped != nil:
		return []Sample{one(name, m.GetUntyped().GetValue())}
	}
	return nil
}

// Find returns the samples named name whose labels include every pair of
// labels (nil matches all).
func (s Scrape) Find(name string, labels map[string]string) []Sample {
	var out []Sample
	for _, x := range s {
		if x.Name == name && hasLabels(x.Labels, labels) {
			out = append(out, x)
		}
	}
	return out
}

// Sum returns the sum of the values of Find(name, labels) and whether any
// sample matched.
func (s Scrape) Sum(name string, labels map[string]string) (float64, bool) {
	found := s.Find(name, labels)
	var sum float64
	for _, x := range found {
		sum += x.Value
	}
	return sum, len(found) > 0
}

// Value is Sum that fails t when no sample matches.
func (s Scrape) Value(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := s.Sum(name, labels)
	require.True(t, ok, "no series %s%v in the scrape; it has: %v", name, labels, s.Names())
	return v
}

// Count is Value for a series that counts (a counter, a count gauge, a
// histogram's _count): it fails t unless the value is a whole number.
func (s Scrape) Count(t testing.TB, name string, labels map[string]string) int64 {
	t.Helper()
	v := s.Value(t, name, labels)
	require.Equal(t, math.Trunc(v), v, "%s%v is not a whole number", name, labels) //nolint:testifylint // exact by design
	return int64(v)
}

// Names returns the distinct sample names, for failure messages.
func (s Scrape) Names() []string {
	seen := make(map[string]bool)
	var out []string
	for _, x := range s {
		if !seen[x.Name] {
			seen[x.Name] = true
			out = append(out, x.Name)
		}
	}
	return out
}

// WaitFor scrapes h until cond holds for a scrape, and fails t when it
// does not by the deadline (the asynchronous work behind a gauge or a
// counter has a deadline, never a sleep). It returns the scrape that
// satisfied cond.
func WaitFor(t testing.TB, h http.Handler, deadline time.Duration, cond func(Scrape) bool) Scrape {
	t.Helper()
	var last Scrape
	ok := assertEventually(deadline, func() bool {
		last = Get(t, h)
		return cond(last)
	})
	require.True(t, ok, "condition not met within %v; last scrape has: %v", deadline, last.Names())
	return last
}

func assertEventually(deadline time.Duration, cond func() bool) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.NewTimer(deadline)
	defer end.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-end.C:
			return false
		case <-tick.C:
		}
	}
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func formatFloat(f float64) string { return model.SampleValue(f).String() }
