package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// labelFlags is a flag that may be repeated, each value a label KEY=VALUE
// within the label rules (api.ParseLabel): --label team=data --label
// env=prod. A key given twice keeps its last value.
type labelFlags map[string]string

func (l *labelFlags) String() string { return formatLabels(*l) }

func (l *labelFlags) Set(v string) error {
	key, value, err := api.ParseLabel(v)
	if err != nil {
		return err
	}
	if *l == nil {
		*l = labelFlags{}
	}
	(*l)[key] = value
	return nil
}

// formatLabels is labels for people, sorted by key: "env=prod,team=data";
// "" for none.
func formatLabels(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// timeFlag is a flag holding an RFC 3339 time; the zero time when not
// given.
type timeFlag struct{ t *time.Time }

func (f timeFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f timeFlag) Set(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time, such as 2026-01-02T15:04:05Z")
	}
	*f.t = t
	return nil
}
