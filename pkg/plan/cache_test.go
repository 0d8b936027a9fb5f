package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// same reports whether a and b hold one document, not two equal ones.
func same(a, b Validated) bool { return &a.JSON()[0] == &b.JSON()[0] }

// A Cache answers a document it has seen with the Validated it made the
// first time, which is ParseValidated's answer; an invalid document is
// refused as ParseValidated refuses it, every time.
func TestCacheAnswersASeenPlanFromMemory(t *testing.T) {
	t.Parallel()
	c := NewCache(Limits{}, 0)
	for _, file := range []string{"hello.yaml", "fanout.json", "gate.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		want, err := ParseValidated(data, Limits{})
		require.NoError(t, err)

		first, err := c.ParseValidated(data)
		require.NoError(t, err)
		require.Equal(t, want, first, file)
		again, err := c.ParseValidated(append([]byte(nil), data...))
		require.NoError(t, err)
		require.True(t, same(first, again), "%s: answered from the cache", file)
	}
	bad := []byte(`{"planId":"p","planVersion":"1","steps":[]}`)
	_, want := ParseValidated(bad, Limits{})
	require.Error(t, want)
	for range 2 {
		_, err := c.ParseValidated(bad)
		require.Equal(t, want, err)
	}
}

// A Cache validates against its own limits, and holds no more documents
// than its budget of bytes: a plan that would go over it empties the
// Cache, and a plan over the whole budget is never held.
func TestCacheKeepsToItsLimitsAndBudget(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "fanout.json"))
	require.NoError(t, err)
	_, err = NewCache(Limits{MaxPlanBytes: len(data) - 1}, 0).ParseValidated(data)
	require.Error(t, err, "the Cache's limits apply")

	v, err := ParseValidated(data, Limits{})
	require.NoError(t, err)
	hello, err := os.ReadFile(filepath.Join("testdata", "hello.yaml"))
	require.NoError(t, err)
	h, err := ParseValidated(hello, Limits{})
	require.NoError(t, err)

	c := NewCache(Limits{}, len(v.JSON())+len(h.JSON())-1)
	first, _ := c.ParseValidated(data)
	_, _ = c.ParseValidated(hello) // over the budget: starts over, holding hello
	again, _ := c.ParseValidated(data)
	require.False(t, same(first, again), "the budget emptied the cache")
	require.LessOrEqual(t, c.bytes, c.maxBytes)

	tiny := NewCache(Limits{}, len(v.JSON())-1)
	first, _ = tiny.ParseValidated(data)
	again, _ = tiny.ParseValidated(data)
	require.False(t, same(first, again), "a plan over the whole budget is not held")
	require.Zero(t, tiny.bytes)
}
