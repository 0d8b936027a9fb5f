package jsonrpc

import "fmt"

// The error codes the JSON-RPC 2.0 specification defines.
const (
	// CodeParseError: the body is not valid JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: the JSON is not a valid request object, or the
	// batch is empty or too large.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: there is no method of that name.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: the params do not fit the method. Methods return
	// it themselves; its data carries a Weft InvalidArgument error.
	CodeInvalidParams = -32602
	// CodeInternalError: a fault of the server. The message never carries
	// the underlying error's text.
	CodeInternalError = -32603
)

// Weft's codes in the specification's server-error range, -32000 to -32099.
// Each mirrors an HTTP status of the REST API (the last two digits of the
// code follow it where they can); the error's data carries the Weft error
// (pkg/api.Error) with its stable code.
const (
	// CodeUnauthenticated: no API key, or one the gateway does not know
	// (HTTP 401).
	CodeUnauthenticated = -32001
	// CodePermissionDenied: the key's role may not do this (HTTP 403).
	CodePermissionDenied = -32003
	// CodeNotFound: no such run, or one of another tenant (HTTP 404).
	CodeNotFound = -32004
	// CodeConflict is Weft's one conflict code (HTTP 409); its data
	// carries the Weft error code, e.g. SignalAcceptanceIndeterminate.
	CodeConflict = -32009
	// CodePayloadTooLarge: the body or the signal payload is over its
	// limit (HTTP 413).
	CodePayloadTooLarge = -32013
	// CodeRateLimited: too many requests, or the environment is at its
	// limit of concurrent runs; the data says when to try again (HTTP 429).
	CodeRateLimited = -32029
	// CodeUnavailable: the gateway is shutting down or its database is
	// unreachable; retrying with the same ids is safe (HTTP 503).
	CodeUnavailable = -32053
)

// Error is a JSON-RPC error object. A Method returns one (or an error
// wrapping one) to choose the code, message and data of its answer.
type Error struct {
	// Code is one of the Code… constants.
	Code int `json:"code"`
	// Message is a short description for people, one sentence.
	Message string `json:"message"`
	// Data is marshalled with encoding/json and omitted when nil. If it
	// cannot be marshalled, the answer goes without it.
	Data any `json:"data,omitempty"`
}

// Error returns the code and the message.
func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}
