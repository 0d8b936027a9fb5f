package events

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomHistory returns n events of testRun with runSeq 1…n: a random mix
// of every event type, over a few steps and attempts, in no particular
// causal order, so that the reducer's rules meet each other in many orders.
func randomHistory(r *rand.Rand, n int) []Event {
	types := append(append([]Type{}, CanonicalTypes...), AdditiveTypes...)
	types = append(types, "UnknownToThisVersion")
	attempt := func() string { return strconv.Itoa(1 + r.IntN(3)) }
	h := make([]Event, 0, n)
	for seq := int64(1); seq <= int64(n); seq++ {
		typ := types[r.IntN(len(types))]
		opts := []func(*Event){on(fmt.Sprintf("s%d", r.IntN(4)), attempt()), engine(attempt())}
		if r.IntN(4) == 0 {
			opts = append(opts, unpersisted)
		}
		switch typ {
		case StepCompleted:
			arts := []ArtifactRef{artA, artB}[:r.IntN(3)]
			opts = append(opts, payload(StepCompletedData{Artifacts: arts}))
		case StepFailed:
			opts = append(opts, payload(StepFailedData{Error: errX}))
		case StepSkipped:
			opts = append(opts, payload(StepSkippedData{Reason: "r" + attempt()}))
		case StepRetryScheduled:
			opts = append(opts, payload(StepRetryScheduledData{Error: errX, NextLogicalAttemptID: attempt()}))
		case RunStarted:
			opts = append(opts, runRef(`{"w":`+attempt()+`}`))
		case RunFailed:
			opts = append(opts, payload(RunFailedData{Reason: "r", StepID: fmt.Sprintf("s%d", r.IntN(4))}))
		default:
		}
		h = append(h, ev(seq, typ, opts...))
	}
	return h
}

// randomChunks splits h into consecutive chunks of random sizes (some empty).
func randomChunks(r *rand.Rand, h []Event) [][]Event {
	var chunks [][]Event
	for rest := h; len(rest) > 0; {
		k := r.IntN(min(len(rest), 7) + 1)
		chunks = append(chunks, rest[:k])
		rest = rest[k:]
	}
	return chunks
}

// TestProjectSplitInvariance: projecting a history at once equals
// projecting it in any split into incremental chunks, and feeding a chunk
// again (or with some of the events before it) changes nothing.
func TestProjectSplitInvariance(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		h := randomHistory(r, 1+r.IntN(60))
		whole, err := Project(testRun, h)
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, int64(len(h)), whole.LastEventSeq, "seed %d", seed)

		for split := range 5 {
			s, err := Project(testRun, nil)
			require.NoError(t, err)
			applied := 0
			for _, c := range randomChunks(r, h) {
				s, err = ProjectIncremental(s, c)
				require.NoError(t, err, "seed %d split %d", seed, split)

				again, err := ProjectIncremental(s, c)
				require.NoError(t, err)
				require.Equal(t, s, again, "seed %d split %d: chunk fed twice", seed, split)

				overlap, err := ProjectIncremental(s, h[r.IntN(applied+1):applied+len(c)])
				require.NoError(t, err)
				require.Equal(t, s, overlap, "seed %d split %d: overlapping refetch", seed, split)
				applied += len(c)
			}
			require.Equal(t, whole, s, "seed %d split %d", seed, split)
		}
	}
}

// TestProjectStopsAtEveryGap: removing any one event from a history makes
// the projection stop exactly there, equal to the projection of the prefix.
func TestProjectStopsAtEveryGap(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(42, 7))
	h := randomHistory(r, 40)
	for i := range h {
		holed := append(clip(h[:i]), h[i+1:]...)
		got, err := Project(testRun, holed)
		want, wantErr := Project(testRun, h[:i])
		require.NoError(t, wantErr)
		if i == len(h)-1 {
			require.NoError(t, err)
		} else {
			var gap *GapError
			require.ErrorAs(t, err, &gap)
			require.Equal(t, int64(i), gap.LastEventSeq)
			require.Equal(t, int64(i+2), gap.NextSeq)
		}
		require.Equal(t, want, got, "event %d removed", i+1)
	}
}
