package round

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// cancelDedupeSuffix ends the Nats-Msg-Id of a run's cancel notice,
// "<runId>/cancel": a run is cancelled once (RunCancelled ends it), so the
// id is deterministic, and a relay's republish after a crash is dropped by
// the stream's duplicate window.
const cancelDedupeSuffix = "/cancel"

// cancelMessages returns the outbox messages of the cancel notices of
// cancels, one per run in the order the runs first appear, on
// weft.cancel.<runId> (captured by WEFT_CANCELS). Written in the round's
// transaction, a notice is as durable as the RunCancelled it follows: the
// relay publishes it even when the engine dies right after the commit.
// Each notice names the steps to stop and the logical attempt of each
// (task.Cancel.Attempts), so a worker drops those attempts and no later
// one.
func cancelMessages(cancels []decide.Cancel) ([]outbox.Message, error) {
	var order []string
	byRun := map[string]*task.Cancel{}
	for _, c := range cancels {
		n := byRun[c.RunID]
		if n == nil {
			n = &task.Cancel{SchemaVersion: task.SchemaVersion, RunID: c.RunID, Reason: c.Reason,
				Attempts: map[string]string{}}
			byRun[c.RunID] = n
			order = append(order, c.RunID)
		}
		n.StepIDs = append(n.StepIDs, c.StepID)
		n.Attempts[c.StepID] = strconv.Itoa(c.LogicalAttempt)
	}
	msgs := make([]outbox.Message, 0, len(order))
	for _, runID := range order {
		subject, err := streams.CancelSubject(runID)
		if err != nil {
			return nil, fmt.Errorf("round: cancel notice of run %s: %w", runID, err)
		}
		payload, err := json.Marshal(byRun[runID])
		if err != nil {
			return nil, fmt.Errorf("round: encode cancel notice of run %s: %w", runID, err)
		}
		msgs = append(msgs, outbox.Message{Subject: subject, Payload: payload, DedupeID: runID + cancelDedupeSuffix})
	}
	return msgs, nil
}
