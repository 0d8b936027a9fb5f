package outbox

import (
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
		require.Equal(t, s.want, w.lingers(s.rows), "claim %d found %d rows", i, s.rows)
	}

	off := &worker{r: &Relay{cfg: RelayConfig{BatchSize: 4, IdleGrace: -1}.WithDefaults()}}
	for i, s := range steps {
		require.False(t, off.lingers(s.rows), "grace off: claim %d", i)
	}
}

func TestIdleGraceEdges(t *testing.T) {
	t.Parallel()
	require.Equal(t, DefaultIdleGrace, RelayConfig{}.WithDefaults().IdleGrace)
	require.Equal(t, -time.Nanosecond, RelayConfig{IdleGrace: -time.Nanosecond}.WithDefaults().IdleGrace, "off is kept")
	require.NoError(t, RelayConfig{IdleGrace: MaxIdleGrace}.Validate())
	require.NoError(t, RelayConfig{IdleGrace: -1}.Validate())
	require.ErrorIs(t, RelayConfig{IdleGrace: MaxIdleGrace + 1}.Validate(), ErrInvalidConfig)
}
