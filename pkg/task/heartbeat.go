package task

import (
	"encoding/base64"
	"encoding/json"
	"time"
)

// Heartbeats are not events. An activity that reports progress
// (worker.Input.Heartbeat) may do so every few seconds for hours; written
// to the event log, that would grow every run's history, its checkpoints
// and every replay without bound, for a value only the next attempt reads.
// So a worker puts the latest heartbeat of each step in the JetStream
// key-value bucket HeartbeatsBucket, one key per step of a run
// (HeartbeatKey), overwriting the last, and the engine reads it only when
// a step's heartbeat timer fires (docs/worker-protocol.md, "Heartbeats").

// HeartbeatsBucket is the JetStream key-value bucket of the heartbeats,
// created by the engine. It keeps one revision per key.
const HeartbeatsBucket = "WEFT_HEARTBEATS"

// DefaultMaxHeartbeatDetailsBytes bounds a heartbeat's Details, inclusive:
// a worker refuses larger details, and the bucket refuses a record larger
// than the limit plus HeartbeatRecordOverheadBytes. Details are progress
// (an offset, a page token), not data.
const DefaultMaxHeartbeatDetailsBytes = 4 << 10

// HeartbeatRecordOverheadBytes is what a Heartbeat record may hold around
// its Details: the ids (each at most plan.DefaultMaxIDBytes, 128 bytes,
// of which the step id is longest escaped), the worker id and the field
// names.
const HeartbeatRecordOverheadBytes = 2 << 10

// Heartbeat is the record of a step's last heartbeat, the value under its
// HeartbeatKey. The bucket's own time of the write (the entry's creation
// time) is when the heartbeat was taken: the engine compares it with the
// step's heartbeatTimeout.
type Heartbeat struct {
	SchemaVersion int    `json:"schemaVersion"`
	RunID         string `json:"runId"`
	StepID        string `json:"stepId"`
	// LogicalAttemptID is the attempt that sent the heartbeat: the engine
	// counts only the heartbeats of the attempt its timer is for, and the
	// worker hands the details of an earlier attempt to the next one.
	LogicalAttemptID string `json:"logicalAttemptId"`
	WorkerID         string `json:"workerId,omitempty"`
	// Details is the activity's progress, a JSON value, or empty.
	Details json.RawMessage `json:"details,omitempty"`
	// SentAt is the worker's clock when it sent the heartbeat, for people;
	// the engine reads the bucket's time instead.
	SentAt time.Time `json:"sentAt"`
}

// HeartbeatKey is the key of step stepID of run runID in HeartbeatsBucket:
// "<runId>.<stepId in unpadded base64url>". A step id may hold characters
// a key may not; a run id (a UUID) holds none.
func HeartbeatKey(runID, stepID string) string {
	return runID + "." + base64.RawURLEncoding.EncodeToString([]byte(stepID))
}
