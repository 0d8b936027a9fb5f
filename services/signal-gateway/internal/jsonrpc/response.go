package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// nullID is the id of an answer whose request's id is unknown.
var nullID = json.RawMessage("null")

// internalErrorNullID is the answer of last resort: it is what encode
// would produce for an internal error with a null id, and cannot fail.
const internalErrorNullID = `{"jsonrpc":"2.0","error":{"code":-32603,"message":"internal error"},"id":null}`

// response is a JSON-RPC response object. Exactly one of Result and Error
// is set; Result is "null" for a nil result, never empty.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

// ParseErrorResponse returns the answer to a body that is not valid JSON:
// a -32700 error with a null id. An empty message becomes "parse error";
// data is omitted when nil, and dropped if it cannot be marshalled. It is
// for the HTTP layer, whose strict-JSON check runs before Serve.
func ParseErrorResponse(message string, data any) []byte {
	if message == "" {
		message = "parse error"
	}
	return ErrorResponse(nil, &Error{Code: CodeParseError, Message: message, Data: data})
}

// ErrorResponse returns a response carrying e, for the HTTP layer's answers
// that do not go through Serve (e.g. CodeUnauthenticated). id is echoed as
// it is; nil or empty means null. If e.Data cannot be marshalled the
// answer goes without it; if id is not valid JSON the answer is an internal
// error with a null id, as it is for a nil e.
func ErrorResponse(id json.RawMessage, e *Error) []byte {
	if e == nil {
		return []byte(internalErrorNullID)
	}
	b, _ := errorResponse(id, e) // An unmarshallable e.Data is dropped, as documented.
	return b
}

// errorResponse encodes e for id, dropping e.Data if it cannot be
// marshalled, and falls back to internalErrorNullID. dataErr is the
// reason e.Data was dropped, if it was.
func errorResponse(id json.RawMessage, e *Error) (resp []byte, dataErr error) {
	if len(id) == 0 {
		id = nullID
	}
	b, dataErr := encode(response{Error: e, ID: id})
	if dataErr == nil {
		return b, nil
	}
	if b, err := encode(response{Error: &Error{Code: e.Code, Message: e.Message}, ID: id}); err == nil {
		return b, dataErr
	}
	return []byte(internalErrorNullID), dataErr
}

// resultResponse encodes a successful answer. result must be valid JSON.
func resultResponse(id, result json.RawMessage) ([]byte, error) {
	return encode(response{Result: result, ID: id})
}

// encode marshals r without HTML escaping, so that the id, a raw message,
// is echoed byte for byte.
func encode(r response) ([]byte, error) {
	r.JSONRPC = "2.0"
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// batchResponse joins the answers of a batch into a JSON array.
func batchResponse(answers [][]byte) []byte {
	out := make([]byte, 0, 2+len(answers)*64)
	out = append(out, '[')
	out = append(out, bytes.Join(answers, []byte(","))...)
	return append(out, ']')
}
