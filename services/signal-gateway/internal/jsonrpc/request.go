package jsonrpc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// request is a validated request object.
type request struct {
	method string
	// params is the params member as it came; nil when absent.
	params json.RawMessage
	// id is the id member as it came; nil for a notification.
	id json.RawMessage
}

// notification reports whether the request has no id member.
func (r request) notification() bool { return r.id == nil }

// members are the member names a request object may have, exactly.
var members = map[string]bool{"jsonrpc": true, "method": true, "params": true, "id": true}

// parseRequest validates one request object. On failure it returns an
// Invalid Request error and the id to answer it with: the request's id if
// that member is valid, null otherwise. An invalid request is always
// answered, so the id is never nil then.
func parseRequest(raw json.RawMessage) (request, json.RawMessage, *Error) {
	var m map[string]json.RawMessage
	if kind(raw) != '{' || json.Unmarshal(raw, &m) != nil {
		return request{}, nullID, invalidRequest("the request must be a JSON object")
	}
	id, ok := m["id"]
	if ok && !validID(id) {
		return request{}, nullID, invalidRequest(`member "id" must be a string, a number or null`)
	}
	answerID := id
	if !ok {
		answerID = nullID
	}
	req := request{params: m["params"], id: id}
	if err := checkMembers(m, &req); err != nil {
		return request{}, answerID, err
	}
	return req, nil, nil
}

// checkMembers checks every member but id and sets req.method.
func checkMembers(m map[string]json.RawMessage, req *request) *Error {
	switch unknown := unknownMembers(m); len(unknown) {
	case 0:
	case 1:
		return invalidRequest("unknown member " + unknown[0])
	default:
		return invalidRequest("unknown members " + strings.Join(unknown, ", "))
	}
	version, ok := m["jsonrpc"]
	if !ok {
		return invalidRequest(`member "jsonrpc" is missing`)
	}
	if s, isString := decodeString(version); !isString || s != "2.0" {
		return invalidRequest(`member "jsonrpc" must be exactly "2.0"`)
	}
	method, ok := m["method"]
	if !ok {
		return invalidRequest(`member "method" is missing`)
	}
	name, isString := decodeString(method)
	if !isString {
		return invalidRequest(`member "method" must be a string`)
	}
	req.method = name
	if params, ok := m["params"]; ok && kind(params) != '{' && kind(params) != '[' {
		return invalidRequest(`member "params" must be an object or an array`)
	}
	return nil
}

// unknownMembers returns the names in m that a request may not have,
// quoted and sorted.
func unknownMembers(m map[string]json.RawMessage) []string {
	var unknown []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !members[name] {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	return unknown
}

// validID reports whether raw is a string, a number or null.
func validID(raw json.RawMessage) bool {
	switch k := kind(raw); {
	case k == '"', k == '-', k >= '0' && k <= '9':
		return true
	default:
		return string(raw) == "null"
	}
}

// decodeString returns the string raw holds, and false if raw is not a
// JSON string.
func decodeString(raw json.RawMessage) (string, bool) {
	var s string
	if kind(raw) != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// kind returns the first byte of a JSON value after leading white space,
// which tells its type, or 0 for an empty value.
func kind(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// invalidRequest returns a -32600 error with the reason as its message.
func invalidRequest(reason string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "invalid request: " + reason}
}
