package keylimit_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/keylimit"
)

func TestConcurrencyEdge(t *testing.T) {
	t.Parallel()
	c := keylimit.NewConcurrency(3)
	var releases []func()
	for i := range 3 {
		release, ok := c.Acquire("k")
		require.True(t, ok, "place %d of 3", i+1)
		releases = append(releases, release)
	}
	_, ok := c.Acquire("k")
	require.False(t, ok, "the fourth is refused")
	require.Equal(t, 3, c.InFlight("k"), "a refusal takes no place")

	other, ok := c.Acquire("other")
	require.True(t, ok, "another key is unaffected")
	other()

	releases[0]()
	releases[0]() // twice is harmless
	require.Equal(t, 2, c.InFlight("k"))
	r, ok := c.Acquire("k")
	require.True(t, ok, "a release frees one place")
	_, ok = c.Acquire("k")
	require.False(t, ok)

	r()
	releases[1]()
	releases[2]()
	require.Equal(t, 0, c.InFlight("k"))
}

func TestConcurrencyDefaultAndOff(t *testing.T) {
	t.Parallel()
	c := keylimit.NewConcurrency(0)
	require.Equal(t, keylimit.DefaultMaxInFlight, c.Max())
	for range keylimit.DefaultMaxInFlight {
		_, ok := c.Acquire("k")
		require.True(t, ok)
	}
	_, ok := c.Acquire("k")
	require.False(t, ok)

	off := keylimit.NewConcurrency(-1)
	for range 10 * keylimit.DefaultMaxInFlight {
		_, ok := off.Acquire("k")
		require.True(t, ok)
	}
	var nilC *keylimit.Concurrency
	release, ok := nilC.Acquire("k")
	require.True(t, ok)
	release()
}

func TestConcurrencyRaceNeverOverAdmits(t *testing.T) {
	t.Parallel()
	c := keylimit.NewConcurrency(10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 100 {
		wg.Go(func() {
			if _, ok := c.Acquire("k"); ok {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 10, granted)
}
