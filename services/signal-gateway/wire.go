package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/strictjson"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// signalBody is the body of POST /v1/runs/{runId}/signals and of a NATS
// publish to weft.signals.<runId>: the run is named outside the body.
type signalBody struct {
	SignalName string `json:"signalName"`
	// SignalID is kept raw so null, numbers and other non-strings are
	// refused with a clear message instead of read as "absent".
	SignalID json.RawMessage `json:"signalId"`
	Payload  json.RawMessage `json:"payload"`
}

// signal is the signal the body sends to run runID; a signalId that is
// not a string is an InvalidArgument.
func (b signalBody) signal(runID string) (intake.Signal, error) {
	id, err := optionalID("signalId", b.SignalID)
	return intake.Signal{RunID: runID, Name: b.SignalName, ID: id, Payload: b.Payload}, err
}

// signalParams is the params of JSON-RPC signal.send: the body plus the
// run, named runId as every other method names it, or workflowId as the
// tier0 contract does; not both (run).
type signalParams struct {
	RunID      *string `json:"runId"`
	WorkflowID *string `json:"workflowId"`
	signalBody
}

// run returns the run sp names and the name it was given under, for the
// problems of the signal: runId when sp names none. Params naming it both
// ways are refused with an InvalidArgument about runId, even when the two
// agree: which one the caller meant is not to be guessed.
func (sp signalParams) run() (id, field string, err error) {
	switch {
	case sp.RunID != nil && sp.WorkflowID != nil:
		return "", "", intake.Invalid("runId", "and workflowId both name the run: give one of them (workflowId is the tier-0 contract's name for runId)")
	case sp.WorkflowID != nil:
		return *sp.WorkflowID, "workflowId", nil
	case sp.RunID != nil:
		return *sp.RunID, "runId", nil
	default:
		return "", "runId", nil
	}
}

// decode reads data strictly into v (strictjson: exact field names, no
// unknown fields or duplicate keys, valid UTF-8, bounded depth, nothing
// trailing) or returns an InvalidArgument *intake.Error listing the
// problems.
func decode(data []byte, v any, maxDepth int, what string) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &intake.Error{Code: api.CodeInvalidArgument, Message: "invalid JSON: " + what + " is missing; it must be a JSON object",
			Details: map[string]any{"field": what}}
	}
	err := strictjson.Decode(data, v, strictjson.Options{MaxDepth: maxDepth, Document: what, Numeric: true})
	if serr, ok := errors.AsType[*strictjson.Error](err); ok {
		problems := make([]api.Problem, len(serr.Problems))
		for i, p := range serr.Problems {
			problems[i] = api.Problem{Path: p.Path, Code: p.Code, Message: p.Message}
		}
		return &intake.Error{Code: api.CodeInvalidArgument, Message: "invalid " + what + ": " + serr.Error(),
			Details: map[string]any{"problems": problems}}
	}
	return err
}

// startBody is a start request as the transports decode it. Its
// RunRequestID shadows the embedded request's, to tell an id sent empty
// from one left out; the two read the same JSON member, a string or null.
type startBody struct {
	api.StartRunRequest
	RunRequestID *string `json:"runRequestId"`
}

// decodeStart decodes a start request, in one pass. A runRequestId that
// is present but empty is refused: omitting it asks for a fresh id (a
// start that is not idempotent), and an empty string is more likely a
// caller's bug than that request.
func decodeStart(data []byte, maxDepth int, what string) (api.StartRunRequest, error) {
	var body startBody
	if err := decode(data, &body, maxDepth, what); err != nil {
		return body.StartRunRequest, err
	}
	req := body.StartRunRequest
	if body.RunRequestID != nil {
		if *body.RunRequestID == "" {
			return req, &intake.Error{Code: api.CodeInvalidArgument,
				Message: "runRequestId is empty: send an id to make the start idempotent, or omit the field",
				Details: map[string]any{"field": "runRequestId"}}
		}
		req.RunRequestID = *body.RunRequestID
	}
	return req, nil
}

// optionalID reads the optional string id kept raw in field: nil when
// absent, an InvalidArgument naming field when present but not a string.
func optionalID(field string, raw json.RawMessage) (*string, error) {
	if raw == nil {
		return nil, nil
	}
	var id string
	if bytes.HasPrefix(raw, []byte(`"`)) && json.Unmarshal(raw, &id) == nil {
		return &id, nil
	}
	return nil, intake.Invalid(field, "must be a string, not %s", kindOf(raw))
}

// kindOf names the kind of a JSON value for messages.
func kindOf(v json.RawMessage) string {
	switch {
	case bytes.Equal(v, []byte("null")):
		return "null"
	case len(v) == 0:
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// statusOf is the HTTP status of a Weft error code.
func statusOf(code string) int {
	switch code {
	case api.CodeInvalidArgument, api.CodeUnknownSignal:
		return http.StatusBadRequest
	case api.CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case api.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case api.CodeUnauthenticated:
		return http.StatusUnauthorized
	case api.CodePermissionDenied:
		return http.StatusForbidden
	case api.CodeNotFound:
		return http.StatusNotFound
	case api.CodeRateLimited, api.CodeOverloaded:
		return http.StatusTooManyRequests
	case api.CodeSignalAcceptanceIndeterminate, api.CodeAlreadyExists, api.CodeQuotaExceeded, api.CodeRunTerminal,
		api.CodeIdempotencyConflict, api.CodePlanVersionConflict, api.CodePlanArchived, api.CodeRerunRefused:
		return http.StatusConflict
	case api.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case api.CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// checkContentType refuses a body that is not declared as JSON in UTF-8.
func checkContentType(header string) error {
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt != "application/json" {
		return &intake.Error{Code: api.CodeUnsupportedMediaType,
			Message: fmt.Sprintf("Content-Type must be application/json, not %q", header)}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return &intake.Error{Code: api.CodeUnsupportedMediaType, Message: fmt.Sprintf("charset must be utf-8, not %q", cs)}
	}
	return nil
}

// tooLarge is the refusal of a body over the limit.
func tooLarge(limit int64) *intake.Error {
	return &intake.Error{Code: api.CodePayloadTooLarge, Message: fmt.Sprintf("the body is more than the limit of %d bytes", limit),
		Details: map[string]any{"limit": limit}}
}

// retryAfterHeader renders a refusal's wait as a Retry-After value.
func retryAfterHeader(e *intake.Error) string { return strconv.Itoa(e.RetryAfterSeconds()) }
