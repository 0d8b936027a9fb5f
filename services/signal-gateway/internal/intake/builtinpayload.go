package intake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/strictjson"
)

// retryStepField is the one field of a RETRY_STEP payload.
const retryStepField = "stepId"

// retryStepTarget returns the step a RETRY_STEP payload names. A payload
// the engine would ignore as BAD_PAYLOAD (services/engine/internal/decide,
// retryStep) is refused here as an InvalidArgument about the payload, and
// so is one holding a field besides stepId, which the engine would drop:
// RETRY_STEP runs the step again with the input it had.
func retryStepTarget(payload json.RawMessage) (string, error) {
	bad := invalid("payload", `of RETRY_STEP must be {"stepId": "<id>"}, naming the FAILED step to run again`)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil || fields == nil {
		return "", bad
	}
	var stepID string
	if err := json.Unmarshal(fields[retryStepField], &stepID); err != nil || stepID == "" {
		return "", bad
	}
	delete(fields, retryStepField)
	if len(fields) > 0 {
		return "", unknownPayloadFields(fields, fmt.Sprintf(`is not a field of %s's payload, which is {"stepId": "<id>"}: `+
			`%s runs the step again with the input it had; a run with other input is a new start`, plan.SignalRetryStep, plan.SignalRetryStep))
	}
	return stepID, nil
}

// checkNoPayload refuses, as an InvalidArgument about the payload, a
// payload of name (PAUSE, RESUME or CANCEL, which take none) that is not
// absent, null or the empty object: the engine would drop it.
func checkNoPayload(name string, payload json.RawMessage) error {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil
	}
	var fields map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &fields) != nil {
		return invalid("payload", "of %s must be absent, null or {}: %s takes no payload", name, name)
	}
	if len(fields) > 0 {
		return unknownPayloadFields(fields, fmt.Sprintf("is not a field of %s's payload, which takes none: send no payload, or {}", name))
	}
	return nil
}

// unknownPayloadFields is the refusal of a payload's fields, each of
// which is not a field of its signal's payload: one problem of code
// strictjson.CodeUnknownField per field, in key order, saying msg.
func unknownPayloadFields(fields map[string]json.RawMessage, msg string) *Error {
	keys := slices.Sorted(maps.Keys(fields))
	ps := make([]api.Problem, len(keys))
	for i, k := range keys {
		ps[i] = problem(payloadPath(k), strictjson.CodeUnknownField, msg)
	}
	return Problems(ps)
}

// plainKey is a payload key written as a path's dotted part.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// payloadPath is the path of a payload's member key: payload.key, or
// payload["key"] for a key that is not a plain name (strictjson's paths).
func payloadPath(key string) string {
	if plainKey.MatchString(key) {
		return "payload." + key
	}
	b, _ := json.Marshal(key) // a string always marshals
	return "payload[" + string(b) + "]"
}
