package intake

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A schema problem's JSON pointer reads as the gateway's other paths: an
// index where the input holds an array, a member elsewhere (quoted when
// it is no identifier, escapes undone), and a missing property at its
// would-be place.
func TestInputPath(t *testing.T) {
	t.Parallel()
	doc := map[string]any{"lines": []any{map[string]any{"sku": 1}}, "0": map[string]any{}}
	for pointer, want := range map[string]string{
		"":                "input",
		"/total":          "input.total",
		"/lines/0/sku":    "input.lines[0].sku",
		"/lines/7":        "input.lines[7]",
		"/0/a~1b~0c":      "input[\"0\"][\"a/b~c\"]",
		"/missing/nested": "input.missing.nested",
	} {
		require.Equal(t, want, inputPath(doc, pointer), pointer)
	}
}
