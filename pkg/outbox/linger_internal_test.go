package outbox

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkerLingers walks lingers through the claims of a partition going
// from busy to idle and back: a full batch claims again at once, a partial
// one waits IdleGrace, the first empty claim after a full batch waits too,
// an empty claim after a wait arms, and an armed worker never waits.
func TestWorkerLingers(t *testing.T) {
	t.Parallel()
	type claim struct {
		rows  int
		armed bool
		want  bool
	}
	steps := []claim{
		{rows: 4, want: false}, // full: rows are waiting
		{rows: 0, want: true},  // empty after a full batch: one grace
		{rows: 0, want: false}, // empty after the grace: arm
		{rows: 0, armed: true, want: false},
		{rows: 1, want: true}, // woken, partial: gather what follows
		{rows: 2, want: true},
		{rows: 0, want: false},
		{rows: 4, want: false},
		{rows: 3, want: true},
	}
	w := &worker{r: &Relay{cfg: RelayConfig{BatchSize: 4}.WithDefaults()}}
	for i, s := range steps {
		w.armed = s.armed
		require.Equal(t, s.want, w.lingers(s.rows, s.rows >= 4), "claim %d found %d rows", i, s.rows)
	}

	off := &worker{r: &Relay{cfg: RelayConfig{BatchSize: 4, IdleGrace: -1}.WithDefaults()}}
	for i, s := range steps {
		require.False(t, off.lingers(s.rows, s.rows >= 4), "grace off: claim %d", i)
	}
}

// TestClaimFills: a claim is full when one partition gave its whole
// share, however many rows the claim holds in all.
func TestClaimFills(t *testing.T) {
	t.Parallel()
	keys := keysInPartitions(t, 3)
	rowsOf := func(ks ...string) []row {
		out := make([]row, len(ks))
		for i, k := range ks {
			out[i] = row{orderKey: k, partition: PartitionOf(k)}
		}
		return out
	}
	a, b, c := keys[0], keys[1], keys[2]
	require.False(t, fills(rowsOf(a, a), 3), "fewer rows than one share")
	require.False(t, fills(rowsOf(a, a, b, b, c, c), 3), "no partition gave 3")
	require.True(t, fills(rowsOf(a, b, b, b), 3), "b's partition gave its share")
	require.True(t, fills(rowsOf(a, a, a), 3))
}

// keysInPartitions returns n order keys, each in another partition.
func keysInPartitions(t *testing.T, n int) []string {
	t.Helper()
	seen := map[int]bool{}
	var keys []string
	for i := 0; len(keys) < n; i++ {
		require.Less(t, i, 10000, "no key found for %d partitions", n)
		k := "key-" + strconv.Itoa(i)
		if p := PartitionOf(k); !seen[p] {
			seen[p] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func TestIdleGraceEdges(t *testing.T) {
	t.Parallel()
	require.Equal(t, DefaultIdleGrace, RelayConfig{}.WithDefaults().IdleGrace)
	require.Equal(t, -time.Nanosecond, RelayConfig{IdleGrace: -time.Nanosecond}.WithDefaults().IdleGrace, "off is kept")
	require.NoError(t, RelayConfig{IdleGrace: MaxIdleGrace}.Validate())
	require.NoError(t, RelayConfig{IdleGrace: -1}.Validate())
	require.ErrorIs(t, RelayConfig{IdleGrace: MaxIdleGrace + 1}.Validate(), ErrInvalidConfig)
}
