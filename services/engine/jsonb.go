package engine

import (
	"encoding/json"
	"fmt"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/strictjson"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// CodeInvalidOutput fails, not retryable, an attempt whose reported output
// is not JSON a jsonb column holds as it is: malformed, not UTF-8, deeper
// than Config.MaxOutputDepth, with a duplicate key, a number past
// Postgres numeric's range or the escape \u0000. The engine records the
// failure instead of an event the log would refuse, so one worker's output
// cannot fail the write of the round that carries it, again on every
// redelivery.
const CodeInvalidOutput = decide.CodeInvalidOutput

// decodeResult decodes a worker's result so that every string the engine
// may write holds no U+0000 (Postgres text refuses it): an escape \u0000
// outside the output reads as U+FFFD. The output is kept as sent, for
// outputFits to judge.
func decodeResult(data []byte) (task.Result, error) {
	var res task.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("decode result: %w", err)
	}
	if !strictjson.HasNULEscape(data) {
		return res, nil
	}
	output := res.Output
	res = task.Result{}
	if err := json.Unmarshal(strictjson.ReplaceNULEscapes(data), &res); err != nil {
		return res, fmt.Errorf("decode result: %w", err)
	}
	res.Output = output
	return res, nil
}

// refuseUnfitOutput turns a completed result whose output jsonb cannot
// hold into a failure of its attempt, CodeInvalidOutput, not retryable.
func (s *Service) refuseUnfitOutput(res *task.Result) {
	if res.Kind != task.Completed || len(res.Output) == 0 {
		return
	}
	err := strictjson.Valid(res.Output, strictjson.Options{
		Document: "the output", MaxDepth: s.cfg.MaxOutputDepth, MaxProblems: 1, Numeric: true, NoNUL: true,
	})
	if err == nil {
		return
	}
	res.Kind, res.Output, res.Artifacts = task.Failed, nil, nil
	res.Reconcile = completedUnusable(res.Reconcile)
	res.Error = &events.StepError{Code: CodeInvalidOutput, Retryable: false, Category: "WORKER",
		Message: "the reported output cannot be stored: " + err.Error()}
}
