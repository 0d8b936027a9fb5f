package readapi

import (
	"fmt"
	"net/url"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// parseFilters reads into q the list's filters by plan version, label and
// time range from v, and refuses: a planVersion that is empty or given
// without plan (a version names a version of one plan); a label that is
// not KEY=VALUE within the label rules (api.ParseLabel), or whose key an
// earlier label gave another value; a time that is not RFC 3339; a range
// whose start is not before its end.
func (q *listQuery) parseFilters(v url.Values) error {
	if v.Has("planVersion") && (q.version == "" || q.plan == "") {
		return fmt.Errorf("planVersion %q: want a version, with plan naming its plan", q.version)
	}
	for _, raw := range v["label"] {
		key, value, err := api.ParseLabel(raw)
		if err != nil {
			return err
		}
		if old, seen := q.labels[key]; seen && old != value {
			return fmt.Errorf("label %q: key %q is given another value, %q: a run has one value per key", raw, key, old)
		}
		if q.labels == nil {
			q.labels = map[string]string{}
		}
		q.labels[key] = value
	}
	var err error
	if q.created, err = parseRange(v, "createdAfter", "createdBefore"); err != nil {
		return err
	}
	q.ended, err = parseRange(v, "endedAfter", "endedBefore")
	return err
}

// parseRange reads the range [v[from], v[to]) of RFC 3339 times; a bound
// left out is none.
func parseRange(v url.Values, from, to string) (timeRange, error) {
	var r timeRange
	for _, b := range []struct {
		name string
		at   *time.Time
	}{{from, &r.from}, {to, &r.to}} {
		if !v.Has(b.name) {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, v.Get(b.name))
		if err != nil {
			return r, fmt.Errorf("%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z)", b.name, v.Get(b.name))
		}
		*b.at = at
	}
	if !r.from.IsZero() && !r.to.IsZero() && !r.from.Before(r.to) {
		return r, fmt.Errorf("%s %s is not before %s %s: the range holds no time", from, v.Get(from), to, v.Get(to))
	}
	return r, nil
}
