package round

import (
	"context"
	"fmt"

	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// withRerun returns in, a start of run, with what the run copies from its
// source when it is a rerun (decide.Rerun): the source events its
// RunApproved names, read now, or why one of them is gone. Any other
// input, or run, is returned as it is.
func (x *Runner) withRerun(ctx context.Context, w *journal.Write, in decide.Input, run *runView) (decide.Input, error) {
	src := run.state.Run.Rerun
	if src == nil || len(src.Reuse) == 0 || !mayStart(in, run) {
		return in, nil
	}
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	seqs := make([]int64, len(src.Reuse))
	for i, r := range src.Reuse {
		seqs[i] = r.RunSeq
	}
	evs, err := x.log.EventsFetchSeqsTx(ctx, w.Tx(), src.RunID, seqs)
	if err != nil {
		return nil, fmt.Errorf("round: read rerun %s's source %s: %w", run.state.RunID, src.RunID, err)
	}
	var rerun decide.Rerun
	bySeq := make(map[int64]int, len(evs))
	for i, ev := range evs {
		bySeq[ev.RunSeq] = i
	}
	for _, r := range src.Reuse {
		i, ok := bySeq[r.RunSeq]
		if !ok || evs[i].StepID != r.StepID {
			rerun.Gone = fmt.Sprintf("step %q's outcome (run %s, runSeq %d) is no longer in the source run's log", r.StepID, src.RunID, r.RunSeq)
			break
		}
		u, err := decide.ReusedOf(evs[i])
		if err != nil {
			return nil, fmt.Errorf("round: rerun %s: %w", run.state.RunID, err)
		}
		rerun.Reused = append(rerun.Reused, u)
	}
	switch v := in.(type) {
	case decide.RunApproved:
		v.Rerun = rerun
		return v, nil
	case decide.Resync:
		v.Rerun = rerun
		return v, nil
	}
	return in, nil
}
