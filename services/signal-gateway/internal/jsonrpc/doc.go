// Package jsonrpc is the transport-independent core of the signal gateway's
// JSON-RPC 2.0 endpoint (https://www.jsonrpc.org/specification): it takes
// the raw body of a POST /rpc and returns the raw body of the answer.
//
// # Contract
//
// The HTTP layer reads the body with a size limit, authenticates the caller
// and checks that the body is strict JSON (valid UTF-8, no duplicate keys,
// bounded depth, no trailing data); when that check fails it answers with
// ParseErrorResponse. It then calls Server.Serve with the body. Serve
// re-checks only that the body is valid UTF-8 and JSON (-32700 if not); it
// does not detect duplicate keys, and for a duplicated member the last one
// wins.
//
// Serve follows the specification:
//
//   - A body that is an object is one request; an array is a batch. Any
//     other JSON value is an Invalid Request (-32600) with a null id.
//   - An empty batch, or one of more than Options.MaxBatch elements, is
//     answered with a single Invalid Request error (not an array), and
//     nothing in it is executed.
//   - A batch is answered with an array of one response per element that is
//     not a notification, in request order. Elements run one after another.
//   - A request is an object with exactly the members "jsonrpc" (the string
//     "2.0"), "method" (a string), optionally "params" (an object or an
//     array) and optionally "id" (a string, a number or null). Member names
//     match exactly, case-sensitively; any other member makes the request
//     invalid (-32600), and the error message names it.
//   - A request without an "id" member is a notification: it is executed
//     but never answered, even when it fails. "id": null is not a
//     notification; it is a request whose answer has a null id. A request
//     that is not valid is always answered, with or without an id.
//   - The answer echoes the request's id byte for byte (1.0 stays 1.0). An
//     invalid request is answered with its id when the id member itself is
//     valid, and with a null id otherwise.
//   - When there is nothing to answer (a notification, or a batch of only
//     notifications) Serve reports ok=false and the HTTP layer answers 204
//     with no body.
//
// A Method returns a result, which is marshalled with encoding/json (nil
// becomes "result": null), or an error. An *Error anywhere in the error's
// chain is sent as it is, data included; any other error is logged and
// answered with -32603 "internal error", without its text. Params reach the
// method as they came: methods that take named params answer a params
// array, or a missing params member, with CodeInvalidParams themselves.
//
// Weft's own failures use the server-error codes from -32000 to -32099
// declared here (CodeUnauthenticated and the rest); their data carries the
// Weft error (pkg/api.Error), whose stable code programs branch on.
package jsonrpc
