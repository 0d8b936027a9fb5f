package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
)

// CheckLabels takes labels at every limit and refuses each rule broken, at
// the label's path, in key order.
func TestCheckLabels(t *testing.T) {
	t.Parallel()
	ok := map[string]string{"a": "", "0": "x", strings.Repeat("k", api.MaxLabelKeyBytes): strings.Repeat("v", api.MaxLabelValueBytes),
		"app.example.com/part-of": "shop", "a_b-c.d/e": "wörld, with spaces"}
	for i := len(ok); i < api.MaxLabels; i++ {
		ok[fmt.Sprintf("k%d", i)] = "v"
	}
	require.Len(t, ok, api.MaxLabels)
	require.Empty(t, api.CheckLabels(ok))
	require.Empty(t, api.CheckLabels(nil))

	for key, value := range map[string]string{
		"": "v", strings.Repeat("k", api.MaxLabelKeyBytes+1): "v", "Team": "v", "-a": "v", "a-": "v", "a b": "v", "é": "v", "a:b": "v",
		"ok1": strings.Repeat("v", api.MaxLabelValueBytes+1), "ok2": "a\tb", "ok3": "\x7f", "ok4": "\xff", "ok5": "\u0085",
	} {
		ps := api.CheckLabels(map[string]string{key: value})
		require.Len(t, ps, 1, "%q=%q", key, value)
		require.Equal(t, api.ProblemInvalid, ps[0].Code)
		require.True(t, strings.HasPrefix(ps[0].Path, "labels"), ps[0].Path)
	}
	require.Equal(t, "labels.ok1", api.CheckLabels(map[string]string{"ok1": strings.Repeat("v", 256)})[0].Path)
	require.Equal(t, `labels["a-"]`, api.CheckLabels(map[string]string{"a-": ""})[0].Path)

	over := map[string]string{"z": "\n"}
	for i := range api.MaxLabels {
		over[fmt.Sprintf("k%d", i)] = ""
	}
	ps := api.CheckLabels(over)
	require.Equal(t, []api.Problem{
		{Path: "labels", Code: api.ProblemInvalid, Message: "has 33 labels, more than the limit of 32"},
		{Path: "labels.z", Code: api.ProblemInvalid, Message: "the value must not hold control characters"},
	}, ps)
}

// ParseLabel reads KEY=VALUE, the value all after the first '=', and
// refuses what CheckLabels refuses.
func TestParseLabel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]string{"team=data": {"team", "data"}, "note=": {"note", ""}, "eq=a=b": {"eq", "a=b"}} {
		k, v, err := api.ParseLabel(in)
		require.NoError(t, err, in)
		require.Equal(t, want, [2]string{k, v}, in)
	}
	for _, in := range []string{"team", "=x", "Team=x", "a=\n"} {
		_, _, err := api.ParseLabel(in)
		require.Error(t, err, in)
		require.Contains(t, err.Error(), "label ", in)
	}
}
