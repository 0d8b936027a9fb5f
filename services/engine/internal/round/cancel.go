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
// cancels, one per run and notice (decide.Cancel.Notice) in the order they
// first appear, on weft.cancel.<runId> (captured by WEFT_CANCELS). Written
// in the round's transaction, a notice is as durable as the event it
// follows (RunCancelled, or the timeout's): the relay publishes it even
// when the engine dies right after the commit. Each notice names the steps
// to stop and the logical attempt of each (task.Cancel.Attempts), so a
// worker drops those attempts and no later one. Its Nats-Msg-Id is
// "<runId>/cancel", and "<runId>/cancel/<notice>" for another notice than
// the run's cancellation, so that two notices of one run are never taken
// for duplicates.
func cancelMessages(cancels []decide.Cancel) ([]outbox.Message, error) {
	type key struct{ runID, notice string }
	var order []key
	byKey := map[key]*task.Cancel{}
	for _, c := range cancels {
		k := key{c.RunID, c.Notice}
		n := byKey[k]
		if n == nil {
			n = &task.Cancel{SchemaVersion: task.SchemaVersion, RunID: c.RunID, Reason: c.Reason,
				Attempts: map[string]string{}}
			byKey[k] = n
			order = append(order, k)
		}
		n.StepIDs = append(n.StepIDs, c.StepID)
		n.Attempts[c.StepID] = strconv.Itoa(c.LogicalAttempt)
	}
	msgs := make([]outbox.Message, 0, len(order))
	for _, k := range order {
		subject, err := streams.CancelSubject(k.runID)
		if err != nil {
			return nil, fmt.Errorf("round: cancel notice of run %s: %w", k.runID, err)
		}
		payload, err := json.Marshal(byKey[k])
		if err != nil {
			return nil, fmt.Errorf("round: encode cancel notice of run %s: %w", k.runID, err)
		}
		dedupe := k.runID + cancelDedupeSuffix
		if k.notice != "" {
			dedupe += "/" + k.notice
		}
		msgs = append(msgs, outbox.Message{Subject: subject, Payload: payload, DedupeID: dedupe})
	}
	return msgs, nil
}
