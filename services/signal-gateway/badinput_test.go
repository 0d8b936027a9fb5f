package gateway_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// The tests in this file send the gateway bad input over REST and over
// JSON-RPC and check that it is refused in each transport's shape with a
// message that names what to fix, and that nothing of it is persisted.
// Each top-level test shares one stack among its cases, so the cases run
// one after another: each compares the row counts before and after its
// own request.

// outcome is how the gateway must answer a bad request, in both
// transports.
type outcome struct {
	status  int    // REST: the HTTP status
	code    string // REST: the Weft error code
	rpcHTTP int    // JSON-RPC: the HTTP status
	rpcCode int    // JSON-RPC: the error code
	rpcData string // JSON-RPC: the Weft code in the error's data; "" for none
}

var (
	// invalidArgument: a request that is strict JSON but breaks a rule.
	invalidArgument = outcome{http.StatusBadRequest, api.CodeInvalidArgument,
		http.StatusOK, jsonrpc.CodeInvalidParams, api.CodeInvalidArgument}
	// malformed: a body that is not strict JSON. JSON-RPC checks the whole
	// envelope strictly before it reads a request, so there it is a parse
	// error, which has no data.
	malformed = outcome{http.StatusBadRequest, api.CodeInvalidArgument,
		http.StatusOK, jsonrpc.CodeParseError, ""}
	notFound = outcome{http.StatusNotFound, api.CodeNotFound,
		http.StatusOK, jsonrpc.CodeNotFound, api.CodeNotFound}
	// Faults of the HTTP exchange keep their status over JSON-RPC too.
	unsupportedMediaType = outcome{http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType,
		http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest, api.CodeUnsupportedMediaType}
	bodyTooLarge = outcome{http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge,
		http.StatusRequestEntityTooLarge, jsonrpc.CodePayloadTooLarge, api.CodePayloadTooLarge}
	// payloadTooLarge: a signal payload over intake's limit is a fault of
	// the params, not of the exchange.
	payloadTooLarge = outcome{http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge,
		http.StatusOK, jsonrpc.CodeInvalidParams, api.CodePayloadTooLarge}
)

// rpcID is the id of every JSON-RPC request built here.
const rpcID = "7"

// noContentType makes send leave the Content-Type header out.
const noContentType = "-"

// exchange is one HTTP request: a POST as the operator with a JSON body,
// unless the fields say otherwise.
type exchange struct {
	path        string
	body        []byte
	token       string // operatorToken when empty
	contentType string // application/json when empty; noContentType for none
	chunked     bool   // send the body without a length
}

// send makes the exchange. A chunked body is wrapped in a reader that
// hides its length, so the client sends it with Transfer-Encoding:
// chunked; send checks the framing the client actually wrote.
func (s *stack) send(t *testing.T, x exchange) answer {
	t.Helper()
	var body io.Reader = bytes.NewReader(x.body)
	if x.chunked {
		body = struct{ io.Reader }{body}
	}
	var mu sync.Mutex
	wrote := http.Header{}
	trace := &httptrace.ClientTrace{WroteHeaderField: func(key string, value []string) {
		mu.Lock()
		defer mu.Unlock()
		wrote[key] = value
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
		http.MethodPost, s.base+x.path, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+cmp.Or(x.token, operatorToken))
	switch x.contentType {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case noContentType:
	default:
		req.Header.Set("Content-Type", x.contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	if x.chunked {
		require.Equal(t, []string{"chunked"}, wrote["Transfer-Encoding"], "the body went chunked")
		require.NotContains(t, wrote, "Content-Length")
	} else {
		require.Equal(t, []string{strconv.Itoa(len(x.body))}, wrote["Content-Length"])
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// requireRefusedREST makes the exchange and requires the REST refusal
// want, with a message containing msg, and that nothing was persisted.
func (s *stack) requireRefusedREST(t *testing.T, x exchange, want outcome, msg string) {
	t.Helper()
	before := s.counts(t)
	a := s.send(t, x)
	require.Equal(t, want.status, a.status, "%s", a.body)
	require.Equal(t, "application/json", a.header.Get("Content-Type"))
	e := a.errorBody(t)
	require.Equal(t, want.code, e.Code, "%s", a.body)
	require.NotEmpty(t, msg, "the case names what the message must say")
	require.Contains(t, e.Message, msg)
	require.Equal(t, before, s.counts(t), "nothing is persisted")
}

// rpcAnswer is one JSON-RPC response, its members optional so that their
// absence can be told.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int        `json:"code"`
		Message string     `json:"message"`
		Data    *api.Error `json:"data"`
	} `json:"error"`
}

// requireRefusedRPC makes the exchange and requires the JSON-RPC refusal
// want, answered with id, whose message (and data's message, if it has
// data) contains msg, and that nothing was persisted.
func (s *stack) requireRefusedRPC(t *testing.T, x exchange, want outcome, msg, id string) {
	t.Helper()
	before := s.counts(t)
	a := s.send(t, x)
	require.Equal(t, want.rpcHTTP, a.status, "%s", a.body)
	require.Equal(t, "application/json", a.header.Get("Content-Type"))
	var r rpcAnswer
	require.NoError(t, json.Unmarshal(a.body, &r), "%s", a.body)
	require.Equal(t, "2.0", r.JSONRPC)
	require.JSONEq(t, id, string(r.ID), "%s", a.body)
	require.Nil(t, r.Result, "%s", a.body)
	require.NotNil(t, r.Error, "%s", a.body)
	require.Equal(t, want.rpcCode, r.Error.Code, "%s", a.body)
	require.NotEmpty(t, msg, "the case names what the message must say")
	require.Contains(t, r.Error.Message, msg)
	if want.rpcData == "" {
		require.Nil(t, r.Error.Data, "%s", a.body)
	} else {
		require.NotNil(t, r.Error.Data, "%s", a.body)
		require.Equal(t, want.rpcData, r.Error.Data.Code, "%s", a.body)
		require.Contains(t, r.Error.Data.Message, msg)
	}
	require.Equal(t, before, s.counts(t), "nothing is persisted")
}

// answerID is the id a refusal over JSON-RPC is answered with: null when
// the fault is of the exchange or the envelope cannot be read, else the
// request's own.
func answerID(want outcome) string {
	if want.rpcHTTP != http.StatusOK || want.rpcCode == jsonrpc.CodeParseError {
		return "null"
	}
	return rpcID
}

// rpcCall is the JSON-RPC request of method with params, as raw text.
func rpcCall(method, params string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":` + rpcID + `}`)
}

// signalParams turns a REST signal body into signal.send params: the body
// with workflowId added as its first member. A body that is not an object
// is left as it is.
func signalParams(runID, body string) string {
	rest, ok := strings.CutPrefix(body, "{")
	if !ok {
		return body
	}
	if !strings.HasPrefix(rest, "}") {
		rest = "," + rest
	}
	return `{"workflowId":` + jsonString(runID) + rest
}

// jsonString renders s as a JSON string, keeping invalid UTF-8 as it is
// (json.Marshal would turn it into U+FFFD).
func jsonString(s string) string {
	if !utf8.ValidString(s) {
		return `"` + s + `"`
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a valid string always marshals
	}
	return string(b)
}

func signalsPath(runID string) string { return "/v1/runs/" + url.PathEscape(runID) + "/signals" }

// signalCase is a bad signal, sent over REST to the run's signals and over
// JSON-RPC as signal.send.
type signalCase struct {
	name string
	body string // the REST body; over JSON-RPC the params, with workflowId added
	rpc  string // the whole JSON-RPC body, when it is not derived from body
	// runID is the run addressed, when not the test's run: in the REST
	// path, and as workflowId.
	runID       string
	token       string
	contentType string
	want        outcome
	msg         string // a part of the message: what the caller must fix
	rpcMsg      string // the part over JSON-RPC, when it differs
}

func TestBadInputSignals(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	long := strings.Repeat("n", api.MaxSignalNameBytes)
	runID := s.runWaiting(t, "go", "og", long, long[2:]+"é")
	otherRun := events.NewRunID()

	cases := []signalCase{
		// Not JSON, or not one JSON value.
		{name: "not JSON", body: `signalName=go`, want: malformed, msg: "invalid JSON"},
		{name: "syntax error", body: `{"signalName":"go",}`, want: malformed, msg: "invalid JSON"},
		{name: "truncated", body: `{"signalName":"go"`, want: malformed, msg: "invalid JSON"},
		{name: "empty body", body: ``, want: malformed, msg: "invalid JSON"},
		{name: "not an object", body: `["go"]`, want: invalidArgument, msg: "must be a JSON object"},
		{name: "trailing object", body: `{"signalName":"go"} {"signalName":"go"}`,
			rpc:  string(rpcCall("signal.send", signalParams(runID, `{"signalName":"go"}`))) + ` {}`,
			want: malformed, msg: "trailing data after the request body"},
		{name: "trailing garbage", body: `{"signalName":"go"}x`,
			rpc:  string(rpcCall("signal.send", signalParams(runID, `{"signalName":"go"}`))) + `x`,
			want: malformed, msg: "trailing data after the request body"},

		// Invalid UTF-8 anywhere: refused, never read as U+FFFD.
		{name: "invalid UTF-8 in signalId", body: "{\"signalName\":\"go\",\"signalId\":\"a\xffb\"}", want: malformed, msg: "invalid UTF-8"},
		{name: "overlong encoding in signalId", body: "{\"signalName\":\"go\",\"signalId\":\"a\xc0\xafb\"}", want: malformed, msg: "invalid UTF-8"},
		{name: "encoded surrogate in signalId", body: "{\"signalName\":\"go\",\"signalId\":\"a\xed\xa0\x80b\"}", want: malformed, msg: "invalid UTF-8"},
		{name: "cut sequence in signalId", body: "{\"signalName\":\"go\",\"signalId\":\"caf\xc3\"}", want: malformed, msg: "invalid UTF-8"},
		{name: "invalid UTF-8 in signalName", body: "{\"signalName\":\"g\xfeo\"}", want: malformed, msg: "invalid UTF-8"},
		{name: "invalid UTF-8 in payload", body: "{\"signalName\":\"go\",\"payload\":{\"k\":\"\xff\"}}", want: malformed, msg: "invalid UTF-8"},
		{name: "invalid UTF-8 in a key", body: "{\"signalName\":\"go\",\"signal\xffId\":\"x\"}", want: malformed, msg: "invalid UTF-8"},
		{name: "invalid UTF-8 outside strings", body: "{\"signalName\":\"go\"}\xff", want: malformed, msg: "invalid UTF-8"},

		// Lone surrogate escapes: refused, never read as U+FFFD.
		{name: "lone high surrogate in signalId", body: `{"signalName":"go","signalId":"\ud800"}`, want: malformed, msg: "surrogate"},
		{name: "lone low surrogate in signalId", body: `{"signalName":"go","signalId":"a\udc00"}`, want: malformed, msg: "surrogate"},
		{name: "two high surrogates in signalId", body: `{"signalName":"go","signalId":"\ud800\ud800"}`, want: malformed, msg: "surrogate"},
		{name: "lone surrogate in signalName", body: `{"signalName":"go\udbff"}`, want: malformed, msg: "surrogate"},
		{name: "lone surrogate in payload", body: `{"signalName":"go","payload":["\udfff"]}`, want: malformed, msg: "surrogate"},
		{name: "lone surrogate in a key", body: `{"signalName":"go","payload":{"\ud800":1}}`, want: malformed, msg: "surrogate"},

		// Field names match exactly, and each appears once: no request is
		// read two ways.
		{name: "SignalName", body: `{"SignalName":"go"}`, want: invalidArgument, msg: `did you mean "signalName"?`},
		{name: "SIGNALID", body: `{"signalName":"go","SIGNALID":"x"}`, want: invalidArgument, msg: `did you mean "signalId"?`},
		{name: "signalid beside signalId", body: `{"signalName":"go","signalId":"x","signalid":"y"}`, want: invalidArgument, msg: `unknown field "signalid"`},
		{name: "unknown field", body: `{"signalName":"go","priority":1}`, want: invalidArgument, msg: `unknown field "priority"`},
		// Over JSON-RPC the params' runId is then a second name of the run.
		{name: "runId in the body", body: `{"signalName":"go","runId":"x"}`, want: invalidArgument, msg: `unknown field "runId"`,
			rpcMsg: "runId and workflowId both name the run: give one of them"},
		// REST names the run in the path only; over JSON-RPC the body's
		// workflowId is then a second one.
		{name: "workflowId in the body", body: `{"workflowId":` + jsonString(otherRun) + `,"signalName":"go"}`,
			want: outcome{http.StatusBadRequest, api.CodeInvalidArgument, http.StatusOK, jsonrpc.CodeParseError, ""},
			msg:  `unknown field "workflowId"`, rpcMsg: `key "workflowId" appears more than once`},
		{name: "duplicate signalId", body: `{"signalName":"go","signalId":"a","signalId":"b"}`, want: malformed, msg: `key "signalId" appears more than once`},
		{name: "duplicate signalId of one value", body: `{"signalName":"go","signalId":"a","signalId":"a"}`, want: malformed, msg: `key "signalId" appears more than once`},
		{name: "duplicate signalId by escape", body: `{"signalName":"go","signalId":"a","signal\u0049d":"b"}`, want: malformed, msg: `key "signalId" appears more than once`},
		{name: "duplicate signalName", body: `{"signalName":"go","signalName":"PAUSE"}`, want: malformed, msg: `key "signalName" appears more than once`},
		{name: "duplicate key in payload", body: `{"signalName":"go","payload":{"k":1,"k":2}}`, want: malformed, msg: `key "k" appears more than once`},

		// signalId is a non-empty string of at most 128 UTF-8 bytes.
		{name: "signalId a number", body: `{"signalName":"go","signalId":1}`, want: invalidArgument, msg: "signalId must be a string, not a number"},
		{name: "signalId 1e400", body: `{"signalName":"go","signalId":1e400}`, want: invalidArgument, msg: "signalId must be a string, not a number"},
		{name: "signalId beyond int64", body: `{"signalName":"go","signalId":99999999999999999999}`, want: invalidArgument, msg: "signalId must be a string, not a number"},
		{name: "signalId a boolean", body: `{"signalName":"go","signalId":true}`, want: invalidArgument, msg: "signalId must be a string, not a boolean"},
		{name: "signalId an object", body: `{"signalName":"go","signalId":{"id":"x"}}`, want: invalidArgument, msg: "signalId must be a string, not an object"},
		{name: "signalId an array", body: `{"signalName":"go","signalId":["x"]}`, want: invalidArgument, msg: "signalId must be a string, not an array"},
		{name: "signalId null", body: `{"signalName":"go","signalId":null}`, want: invalidArgument, msg: "signalId must be a string, not null"},
		{name: "signalId empty", body: `{"signalName":"go","signalId":""}`, want: invalidArgument, msg: "signalId must not be empty"},
		{name: "signalId of 129 bytes", body: `{"signalName":"go","signalId":"` + strings.Repeat("i", 127) + `é"}`,
			want: invalidArgument, msg: "signalId is 129 UTF-8 bytes, more than the limit of 128"},
		{name: "signalId with NUL", body: `{"signalName":"go","signalId":"a\u0000b"}`, want: invalidArgument, msg: "signalId must not contain U+0000"},

		// signalName follows the id rules: it may become a subject token.
		{name: "signalName missing", body: `{"signalId":"x"}`, want: invalidArgument, msg: "signalName must not be empty"},
		{name: "signalName empty", body: `{"signalName":""}`, want: invalidArgument, msg: "signalName must not be empty"},
		{name: "signalName null", body: `{"signalName":null}`, want: invalidArgument, msg: "signalName must not be empty"},
		{name: "signalName a number", body: `{"signalName":1}`, want: invalidArgument, msg: "signalName: must be a string"},
		{name: "signalName of 129 bytes", body: `{"signalName":"` + long + `x"}`, want: invalidArgument, msg: "signalName is 129 bytes, more than the limit of 128"},
		{name: "signalName of 129 bytes ending in é", body: `{"signalName":"` + long[2:] + `xé"}`, want: invalidArgument, msg: "signalName is 129 bytes"},
		{name: "signalName with *", body: `{"signalName":"go*"}`, want: invalidArgument, msg: "signalName must not contain '*'"},
		{name: "signalName with >", body: `{"signalName":">"}`, want: invalidArgument, msg: "signalName must not contain '>'"},
		{name: "signalName with .", body: `{"signalName":"go.now"}`, want: invalidArgument, msg: "signalName must not contain '.'"},
		{name: "signalName with a space", body: `{"signalName":"go now"}`, want: invalidArgument, msg: "signalName must not contain whitespace"},
		{name: "signalName with a tab", body: `{"signalName":"go\t"}`, want: invalidArgument, msg: "signalName must not contain whitespace"},
		{name: "signalName with a control character", body: `{"signalName":"go\u0001"}`, want: invalidArgument, msg: "signalName must not contain whitespace, control"},
		{name: "signalName with DEL", body: `{"signalName":"go\u007f"}`, want: invalidArgument, msg: "signalName must not contain whitespace, control"},
		{name: "signalName with a format character", body: `{"signalName":"go\u200b"}`, want: invalidArgument, msg: "signalName must not contain whitespace, control or format"},
		{name: "signalName starting with $", body: `{"signalName":"$SYS"}`, want: invalidArgument, msg: "signalName must not start with '$'"},
		{name: "signalName of SQL", body: `{"signalName":"'; DROP TABLE run_events; --"}`, want: invalidArgument, msg: "signalName must not contain whitespace"},

		// The payload.
		{name: "payload over its limit", body: `{"signalName":"go","payload":"` + strings.Repeat("p", 64<<10) + `"}`,
			want: payloadTooLarge, msg: "payload is 65538 bytes, more than the limit of 65536"},
		{name: "payload with a NUL escape", body: `{"signalName":"go","payload":{"k":"\u0000"}}`, want: invalidArgument, msg: `payload must not contain the escape \u0000`},

		// The run, which becomes a subject token: a canonical UUID.
		{name: "runId *", runID: "*", body: `{"signalName":"go"}`, want: invalidArgument, msg: `must be a run id (a UUID in canonical, lowercase form), not "*"`},
		{name: "runId >", runID: ">", body: `{"signalName":"go"}`, want: invalidArgument, msg: `not ">"`},
		{name: "runId with .", runID: runID + ".x", body: `{"signalName":"go"}`, want: invalidArgument, msg: "must be a run id"},
		{name: "runId with a space", runID: runID + " ", body: `{"signalName":"go"}`, want: invalidArgument, msg: "must be a run id"},
		{name: "runId with a control character", runID: "\x01" + runID, body: `{"signalName":"go"}`, want: invalidArgument, msg: `not "\x01`},
		{name: "runId with NUL", runID: runID[:35] + "\x00", body: `{"signalName":"go"}`, want: invalidArgument, msg: "must be a run id"},
		{name: "runId in upper case", runID: strings.ToUpper(runID), body: `{"signalName":"go"}`, want: invalidArgument, msg: "canonical, lowercase"},
		{name: "runId not UTF-8", runID: "\xff", body: `{"signalName":"go"}`,
			want: outcome{http.StatusBadRequest, api.CodeInvalidArgument, http.StatusOK, jsonrpc.CodeParseError, ""},
			msg:  "must be a run id", rpcMsg: "invalid UTF-8"},
		{name: "missing run", runID: otherRun, body: `{"signalName":"go","signalId":"m"}`, want: notFound, msg: "run " + otherRun + " not found"},
		{name: "another tenant's run", token: strangerToken, body: `{"signalName":"go","signalId":"m"}`, want: notFound, msg: "run " + runID + " not found"},

		// The content type: JSON in UTF-8.
		{name: "text/plain", contentType: "text/plain", body: `{"signalName":"go"}`, want: unsupportedMediaType, msg: `Content-Type must be application/json, not "text/plain"`},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: `{"signalName":"go"}`, want: unsupportedMediaType, msg: "Content-Type must be application/json"},
		{name: "latin1", contentType: "application/json; charset=latin1", body: `{"signalName":"go"}`, want: unsupportedMediaType, msg: `charset must be utf-8, not "latin1"`},
		{name: "UTF-16", contentType: "application/json; charset=utf-16", body: `{"signalName":"go"}`, want: unsupportedMediaType, msg: "charset must be utf-8"},
		{name: "no content type", contentType: noContentType, body: `{"signalName":"go"}`, want: unsupportedMediaType, msg: `Content-Type must be application/json, not ""`},
		{name: "content type unparsable", contentType: "application/json; charset", body: `{"signalName":"go"}`, want: unsupportedMediaType, msg: "Content-Type must be application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := cmp.Or(tc.runID, runID)
			rpc := tc.rpc
			if rpc == "" {
				rpc = string(rpcCall("signal.send", signalParams(run, tc.body)))
			}
			s.requireRefusedREST(t, exchange{path: signalsPath(run), body: []byte(tc.body), token: tc.token, contentType: tc.contentType},
				tc.want, tc.msg)
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: []byte(rpc), token: tc.token, contentType: tc.contentType},
				tc.want, cmp.Or(tc.rpcMsg, tc.msg), answerID(tc.want))
		})
	}

	t.Run("another tenant's run looks missing", func(t *testing.T) {
		// Byte for byte the same answer but for the run id, in both
		// transports: nothing tells the stranger the run exists.
		body := `{"signalName":"go","signalId":"m"}`
		rest := func(run, token string) string {
			a := s.send(t, exchange{path: signalsPath(run), body: []byte(body), token: token})
			return strings.ReplaceAll(string(a.body), run, "RUN")
		}
		require.Equal(t, rest(otherRun, operatorToken), rest(runID, strangerToken))
		rpc := func(run, token string) string {
			a := s.send(t, exchange{path: "/rpc", body: rpcCall("signal.send", signalParams(run, body)), token: token})
			return strings.ReplaceAll(string(a.body), run, "RUN")
		}
		require.Equal(t, rpc(otherRun, operatorToken), rpc(runID, strangerToken))
	})

	// The limits are inclusive, and the cases above were refused for what
	// they name, not for what they share with these.
	accepted := []struct {
		name        string
		body        string
		contentType string
	}{
		{name: "signalName of 128 bytes", body: `{"signalName":"` + long + `"}`},
		{name: "signalName of 128 bytes ending in é", body: `{"signalName":"` + long[2:] + `é"}`},
		{name: "signalId of 128 bytes ending in é", body: `{"signalName":"go","signalId":"` + strings.Repeat("i", 126) + `é"}`},
		{name: "signalId with spaces, dots and controls", body: `{"signalName":"go","signalId":"a b.c*>\u0001"}`},
		{name: "payload of 65536 bytes", body: `{"signalName":"go","payload":"` + strings.Repeat("p", 64<<10-2) + `"}`},
		{name: "charset UTF-8", body: `{"signalName":"go"}`, contentType: "application/json; charset=UTF-8"},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			before := s.counts(t)
			a := s.send(t, exchange{path: signalsPath(runID), body: []byte(tc.body), contentType: tc.contentType})
			require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
			// Over JSON-RPC to another signal name, so that it is not a
			// repeat of the REST request.
			body := strings.Replace(tc.body, `"signalName":"go"`, `"signalName":"og"`, 1)
			r := s.rpcOK(t, exchange{path: "/rpc", body: rpcCall("signal.send", signalParams(runID, body)), contentType: tc.contentType})
			var res api.AcceptedSignalResult
			require.NoError(t, json.Unmarshal(r.Result, &res))
			require.True(t, res.Accepted)
			after := s.counts(t)
			require.Equal(t, before.acceptances+2, after.acceptances)
			require.Equal(t, before.events+2, after.events)
		})
	}
}

// rpcOK makes the exchange and requires a JSON-RPC success.
func (s *stack) rpcOK(t *testing.T, x exchange) rpcAnswer {
	t.Helper()
	a := s.send(t, x)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var r rpcAnswer
	require.NoError(t, json.Unmarshal(a.body, &r), "%s", a.body)
	require.Nil(t, r.Error, "%s", a.body)
	require.JSONEq(t, rpcID, string(r.ID))
	return r
}

// goodStart is a valid start body; the cases below change one part of it.
const goodStart = `{"tenantId":"acme","projectId":"p","environmentId":"dev","planId":"hello","planVersion":"1",` +
	`"runRequestId":"bad-input","plan":` + planDoc + `,"input":{"n":1}}`

func TestBadInputStarts(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	const step = `{"id":"a","activity":"echo"}`
	cases := []struct {
		name        string
		old, new    string // body is goodStart with old replaced by new
		rpc         string // the whole JSON-RPC body, when it is not run.start with body as params
		contentType string
		want        outcome
		msg         string
	}{
		{name: "syntax error", old: `"input":{"n":1}`, new: `"input":{"n":1},`, want: malformed, msg: "invalid JSON"},
		{name: "trailing data", old: `"input":{"n":1}}`, new: `"input":{"n":1}} {}`,
			rpc: string(rpcCall("run.start", goodStart)) + " {}", want: malformed, msg: "trailing data after the request body"},

		{name: "invalid UTF-8 in environmentId", old: `"dev"`, new: "\"d\xffv\"", want: malformed, msg: "invalid UTF-8"},
		{name: "invalid UTF-8 in the plan", old: `"hello"`, new: "\"hell\xf0\"", want: malformed, msg: "invalid UTF-8"},
		{name: "invalid UTF-8 in input", old: `{"n":1}`, new: "{\"n\":\"\xc3\x28\"}", want: malformed, msg: "invalid UTF-8"},
		{name: "lone surrogate in runRequestId", old: `"bad-input"`, new: `"bad-\udc00"`, want: malformed, msg: "surrogate"},

		{name: "TenantId", old: `"tenantId"`, new: `"TenantId"`, want: invalidArgument, msg: `did you mean "tenantId"?`},
		{name: "ENVIRONMENTID", old: `"environmentId"`, new: `"ENVIRONMENTID"`, want: invalidArgument, msg: `did you mean "environmentId"?`},
		{name: "unknown field", old: `"input"`, new: `"owner":"x","input"`, want: invalidArgument, msg: `unknown field "owner"`},
		{name: "unknown field in the plan", old: step, new: `{"id":"a","activity":"echo","timeoutt":"1s"}`, want: invalidArgument, msg: "timeoutt"},
		{name: "duplicate tenantId", old: `"tenantId":"acme"`, new: `"tenantId":"acme","tenantId":"globex"`, want: malformed, msg: `key "tenantId" appears more than once`},
		{name: "duplicate step id", old: step, new: `{"id":"a","id":"b","activity":"echo"}`, want: malformed, msg: `key "id" appears more than once`},
		{name: "duplicate key in input", old: `{"n":1}`, new: `{"n":1,"n":2}`, want: malformed, msg: `key "n" appears more than once`},

		{name: "maxAttempts 1e400", old: step, new: `{"id":"a","activity":"echo","retry":{"maxAttempts":1e400}}`, want: invalidArgument, msg: "maxAttempts"},
		{name: "maxAttempts beyond int64", old: step, new: `{"id":"a","activity":"echo","retry":{"maxAttempts":99999999999999999999}}`, want: invalidArgument, msg: "maxAttempts"},
		{name: "maxAttempts a fraction", old: step, new: `{"id":"a","activity":"echo","retry":{"maxAttempts":2.5}}`, want: invalidArgument, msg: "maxAttempts"},
		{name: "tenantId a number", old: `"tenantId":"acme"`, new: `"tenantId":1`, want: invalidArgument, msg: "tenantId: must be a string"},

		{name: "tenantId with *", old: `"acme"`, new: `"acme*"`, want: invalidArgument, msg: "tenantId must not contain '*'"},
		{name: "tenantId with .", old: `"acme"`, new: `"ac.me"`, want: invalidArgument, msg: "tenantId must not contain '.'"},
		{name: "tenantId with >", old: `"acme"`, new: `"acme>"`, want: invalidArgument, msg: "tenantId must not contain '>'"},
		{name: "tenantId with a space", old: `"acme"`, new: `"acme "`, want: invalidArgument, msg: "tenantId must not contain whitespace"},
		{name: "tenantId with a control character", old: `"acme"`, new: `"acme\u0007"`, want: invalidArgument, msg: "tenantId must not contain whitespace, control"},
		{name: "tenantId empty", old: `"acme"`, new: `""`, want: invalidArgument, msg: "tenantId must not be empty"},
		{name: "environmentId with *", old: `"dev"`, new: `"dev*"`, want: invalidArgument, msg: "environmentId must not contain '*'"},
		{name: "environmentId with >", old: `"dev"`, new: `"dev.>"`, want: invalidArgument, msg: "environmentId must not contain"},
		{name: "environmentId with .", old: `"dev"`, new: `"dev.eu"`, want: invalidArgument, msg: "environmentId must not contain '.'"},
		{name: "environmentId with a space", old: `"dev"`, new: `" dev"`, want: invalidArgument, msg: "environmentId must not contain whitespace"},
		{name: "environmentId with a control character", old: `"dev"`, new: `"dev\u001b"`, want: invalidArgument, msg: "environmentId must not contain whitespace, control"},
		{name: "environmentId starting with $", old: `"dev"`, new: `"$dev"`, want: invalidArgument, msg: "environmentId must not start with '$'"},
		{name: "environmentId of 129 bytes", old: `"dev"`, new: `"` + strings.Repeat("e", 129) + `"`, want: invalidArgument, msg: "environmentId is 129 bytes"},
		{name: "environmentId of SQL", old: `"dev"`, new: `"dev'; DROP TABLE run_requests; --"`, want: invalidArgument, msg: "environmentId must not contain whitespace"},
		{name: "projectId with .", old: `"projectId":"p"`, new: `"projectId":"p.q"`, want: invalidArgument, msg: "projectId must not contain '.'"},
		{name: "runRequestId with a space", old: `"bad-input"`, new: `"bad input"`, want: invalidArgument, msg: "runRequestId must not contain whitespace"},

		{name: "plan a string", old: `"plan":` + planDoc, new: `"plan":"hello"`, want: invalidArgument, msg: "plan must be a plan document"},
		{name: "plan null", old: `"plan":` + planDoc, new: `"plan":null`, want: invalidArgument, msg: "plan must be a plan document"},
		{name: "input with a NUL escape", old: `{"n":1}`, new: `{"n":"\u0000"}`, want: invalidArgument, msg: `must not contain the escape \u0000`},

		{name: "text/plain", contentType: "text/plain", want: unsupportedMediaType, msg: `Content-Type must be application/json, not "text/plain"`},
		{name: "no content type", contentType: noContentType, want: unsupportedMediaType, msg: `Content-Type must be application/json, not ""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(goodStart, tc.old, tc.new, 1)
			if tc.contentType == "" {
				require.NotEqual(t, goodStart, body, "the case changes the body")
			}
			rpc := cmp.Or(tc.rpc, string(rpcCall("run.start", body)))
			s.requireRefusedREST(t, exchange{path: "/v1/runs", body: []byte(body), contentType: tc.contentType}, tc.want, tc.msg)
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: []byte(rpc), contentType: tc.contentType}, tc.want, tc.msg, answerID(tc.want))
		})
	}

	t.Run("the unchanged body is accepted", func(t *testing.T) {
		before := s.counts(t)
		a := s.send(t, exchange{path: "/v1/runs", body: []byte(goodStart)})
		require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
		r := s.rpcOK(t, exchange{path: "/rpc", body: rpcCall("run.start", strings.Replace(goodStart, `"bad-input"`, `"bad-input-rpc"`, 1))})
		var res api.StartRunResult
		require.NoError(t, json.Unmarshal(r.Result, &res))
		require.False(t, res.Duplicate)
		require.Equal(t, before.requests+2, s.counts(t).requests)
	})
}

func TestBadInputRPCEnvelope(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	params := signalParams(runID, `{"signalName":"go","signalId":"env"}`)
	invalidRequest := outcome{rpcHTTP: http.StatusOK, rpcCode: jsonrpc.CodeInvalidRequest}
	parseError := outcome{rpcHTTP: http.StatusOK, rpcCode: jsonrpc.CodeParseError}
	cases := []struct {
		name string
		body string
		want outcome
		id   string
		msg  string
	}{
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","method":"signal.send","params":` + params + `,"id":7}`, invalidRequest, "7", `member "jsonrpc" must be exactly "2.0"`},
		{"jsonrpc a number", `{"jsonrpc":2.0,"method":"signal.send","params":` + params + `,"id":7}`, invalidRequest, "7", `member "jsonrpc" must be exactly "2.0"`},
		{"jsonrpc missing", `{"method":"signal.send","params":` + params + `,"id":7}`, invalidRequest, "7", `member "jsonrpc" is missing`},
		{"method missing", `{"jsonrpc":"2.0","params":` + params + `,"id":7}`, invalidRequest, "7", `member "method" is missing`},
		{"method a number", `{"jsonrpc":"2.0","method":1,"params":` + params + `,"id":7}`, invalidRequest, "7", `member "method" must be a string`},
		{"Method", `{"jsonrpc":"2.0","Method":"signal.send","params":` + params + `,"id":7}`, invalidRequest, "7", `unknown member "Method"`},
		{"unknown member", `{"jsonrpc":"2.0","method":"signal.send","params":` + params + `,"id":7,"auth":"x"}`, invalidRequest, "7", `unknown member "auth"`},
		{"params null", `{"jsonrpc":"2.0","method":"signal.send","params":null,"id":7}`, invalidRequest, "7", `member "params" must be an object or an array`},
		{"params a string", `{"jsonrpc":"2.0","method":"signal.send","params":"go","id":7}`, invalidRequest, "7", `member "params" must be an object or an array`},
		{"id an object", `{"jsonrpc":"2.0","method":"signal.send","params":` + params + `,"id":{}}`, invalidRequest, "null", `member "id" must be a string, a number or null`},
		{"not an object", `"signal.send"`, invalidRequest, "null", "the request must be a JSON object"},
		{"empty batch", `[]`, invalidRequest, "null", "the batch is empty"},
		{"method in the wrong case", `{"jsonrpc":"2.0","method":"Signal.Send","params":` + params + `,"id":7}`,
			outcome{rpcHTTP: http.StatusOK, rpcCode: jsonrpc.CodeMethodNotFound}, "7", `method "Signal.Send" not found`},
		{"params an array", `{"jsonrpc":"2.0","method":"signal.send","params":[` + jsonString(runID) + `,"go"],"id":7}`,
			invalidArgument, "7", "a params must be a JSON object"},

		{"duplicate method", `{"jsonrpc":"2.0","method":"run.start","method":"signal.send","params":` + params + `,"id":7}`, parseError, "null", `key "method" appears more than once`},
		{"duplicate params", `{"jsonrpc":"2.0","method":"signal.send","params":{},"params":` + params + `,"id":7}`, parseError, "null", `key "params" appears more than once`},
		{"duplicate id", `{"jsonrpc":"2.0","method":"signal.send","params":` + params + `,"id":7,"id":8}`, parseError, "null", `key "id" appears more than once`},
		{"invalid UTF-8 in method", "{\"jsonrpc\":\"2.0\",\"method\":\"signal.send\xff\",\"params\":" + params + ",\"id\":7}", parseError, "null", "invalid UTF-8"},
		{"lone surrogate in id", `{"jsonrpc":"2.0","method":"signal.send","params":` + params + `,"id":"\ud800"}`, parseError, "null", "surrogate"},
		{"not JSON", `jsonrpc=2.0`, parseError, "null", "invalid JSON"},
		{"empty body", ``, parseError, "null", "invalid JSON"},
		// One bad element refuses the whole batch: its good element does
		// not run.
		{"batch with a duplicate key", `[` + string(rpcCall("signal.send", params)) + `,` +
			string(rpcCall("signal.send", signalParams(runID, `{"signalName":"go","signalId":"b","signalId":"c"}`))) + `]`,
			parseError, "null", `key "signalId" appears more than once`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: []byte(tc.body)}, tc.want, tc.msg, tc.id)
		})
	}

	t.Run("params missing", func(t *testing.T) {
		// The message ought to say that params is missing; it says only
		// "unexpected EOF" now, so just its presence is held here.
		before := s.counts(t)
		a := s.send(t, exchange{path: "/rpc", body: []byte(`{"jsonrpc":"2.0","method":"signal.send","id":7}`)})
		require.Equal(t, http.StatusOK, a.status)
		var r rpcAnswer
		require.NoError(t, json.Unmarshal(a.body, &r), "%s", a.body)
		require.NotNil(t, r.Error, "%s", a.body)
		require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
		require.NotNil(t, r.Error.Data, "%s", a.body)
		require.Equal(t, api.CodeInvalidArgument, r.Error.Data.Code)
		require.NotEmpty(t, r.Error.Message)
		require.Equal(t, before, s.counts(t))
	})

	t.Run("the envelope is accepted", func(t *testing.T) {
		r := s.rpcOK(t, exchange{path: "/rpc", body: rpcCall("signal.send", params)})
		var res api.AcceptedSignalResult
		require.NoError(t, json.Unmarshal(r.Result, &res))
		require.Equal(t, "env", res.SignalID)
	})
}

// padded returns body followed by spaces up to n bytes, which strict JSON
// allows after the value.
func padded(t *testing.T, body []byte, n int) []byte {
	t.Helper()
	require.LessOrEqual(t, len(body), n)
	return append(body, bytes.Repeat([]byte(" "), n-len(body))...)
}

func TestBadInputBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 4 << 10
	s := setup(t, gateway.Config{MaxBodyBytes: limit})
	runID := s.run(t)
	msg := "the body is more than the limit of 4096 bytes"
	endpoints := []struct {
		name string
		path string
		body func(i int) []byte // a valid body, unique per i
		ok   int
	}{
		{"REST start", "/v1/runs", func(i int) []byte {
			return []byte(strings.Replace(goodStart, `"bad-input"`, `"limit-`+strconv.Itoa(i)+`"`, 1))
		}, http.StatusCreated},
		{"REST signal", signalsPath(runID), func(i int) []byte {
			return fmt.Appendf(nil, `{"signalName":"go","signalId":"limit-%d"}`, i)
		}, http.StatusAccepted},
		{"JSON-RPC", "/rpc", func(i int) []byte {
			return rpcCall("signal.send", signalParams(runID, fmt.Sprintf(`{"signalName":"go","signalId":"rpc-limit-%d"}`, i)))
		}, http.StatusOK},
	}
	i := 0
	for _, ep := range endpoints {
		for _, chunked := range []bool{false, true} {
			name := ep.name + " with Content-Length"
			if chunked {
				name = ep.name + " chunked"
			}
			t.Run(name, func(t *testing.T) {
				i++
				over := exchange{path: ep.path, body: padded(t, ep.body(i), limit+1), chunked: chunked}
				far := exchange{path: ep.path, body: padded(t, ep.body(i), 2*limit), chunked: chunked}
				if ep.path == "/rpc" {
					s.requireRefusedRPC(t, over, bodyTooLarge, msg, "null")
					s.requireRefusedRPC(t, far, bodyTooLarge, msg, "null")
				} else {
					s.requireRefusedREST(t, over, bodyTooLarge, msg)
					s.requireRefusedREST(t, far, bodyTooLarge, msg)
				}
				// The same request at the limit is taken.
				before := s.counts(t)
				a := s.send(t, exchange{path: ep.path, body: padded(t, ep.body(i), limit), chunked: chunked})
				require.Equal(t, ep.ok, a.status, "%s", a.body)
				require.NotContains(t, string(a.body), `"error"`)
				require.Greater(t, s.counts(t).events, before.events)
			})
		}
	}
}

// nested returns n arrays, one inside the other.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestBadInputDepthLimit(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{MaxDepth: 8})
	runID := s.run(t)
	msg := "nested deeper than the limit of 8"
	// The REST body is depth 1 and its payload or input depth 2; over
	// JSON-RPC the envelope is depth 1, the params 2 and the payload 3.
	cases := []struct {
		name string
		path string
		body func(depth int) string // a body nested depth deep in all
	}{
		{"REST signal", signalsPath(runID), func(depth int) string {
			return `{"signalName":"go","payload":` + nested(depth-1) + `}`
		}},
		{"REST start", "/v1/runs", func(depth int) string {
			return strings.Replace(goodStart, `"input":{"n":1}`, `"input":`+nested(depth-1), 1)
		}},
		{"JSON-RPC signal", "/rpc", func(depth int) string {
			return string(rpcCall("signal.send", signalParams(runID, `{"signalName":"go","payload":`+nested(depth-2)+`}`)))
		}},
		{"JSON-RPC start", "/rpc", func(depth int) string {
			body := strings.Replace(goodStart, `"input":{"n":1}`, `"input":`+nested(depth-2), 1)
			return string(rpcCall("run.start", strings.Replace(body, `"bad-input"`, `"bad-input-rpc"`, 1)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			deep := exchange{path: tc.path, body: []byte(tc.body(9))}
			if tc.path != "/rpc" {
				s.requireRefusedREST(t, deep, malformed, msg)
			} else {
				s.requireRefusedRPC(t, deep, malformed, msg, "null")
			}
			before := s.counts(t)
			a := s.send(t, exchange{path: tc.path, body: []byte(tc.body(8))})
			require.Less(t, a.status, 300, "%s", a.body)
			require.NotContains(t, string(a.body), `"error"`)
			require.Equal(t, before.events+1, s.counts(t).events)
		})
	}
}

// TestBadInputIDsAreExact: a signalId is its bytes. Bytes encoding/json
// would read as U+FFFD are refused rather than merged with each other or
// with a real U+FFFD, and one id spelled two ways in JSON is one id.
func TestBadInputIDsAreExact(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	path := signalsPath(runID)
	signal := func(id string) []byte { return []byte(`{"signalName":"go","signalId":` + id + `}`) }

	first := s.send(t, exchange{path: path, body: signal("\"a\uFFFDb\"")})
	require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
	require.Equal(t, "false", first.header.Get("Weft-Duplicate"))
	again := s.send(t, exchange{path: path, body: signal(`"a\ufffdb"`)})
	require.Equal(t, http.StatusAccepted, again.status, "%s", again.body)
	require.Equal(t, "true", again.header.Get("Weft-Duplicate"), "the same id escaped is the same id")

	for _, tc := range []struct{ id, msg string }{
		{"\"a\xffb\"", "invalid UTF-8"},
		{"\"a\xfeb\"", "invalid UTF-8"},
		{`"a\ud800b"`, "surrogate"},
		{`"a\udfffb"`, "surrogate"},
	} {
		s.requireRefusedREST(t, exchange{path: path, body: signal(tc.id)}, malformed, tc.msg)
		s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("signal.send", signalParams(runID, string(signal(tc.id))))},
			malformed, tc.msg, "null")
	}
	rows, err := s.db.Pool.Query(context.Background(), `SELECT signal_id FROM signal_acceptances WHERE run_id = $1`, runID)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"a\uFFFDb"}, ids, "one id, stored as sent")
}

// TestBadInputSQL: ids are data. SQL in a signalId is stored verbatim and
// does nothing; in a name it is refused by the id rules (it has spaces),
// while a quote alone is allowed and stored verbatim too.
func TestBadInputSQL(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.runWaiting(t, "go", "go'--")

	accept := func(t *testing.T, name, id string, rpc bool) {
		t.Helper()
		before := s.counts(t)
		body := `{"signalName":` + jsonString(name) + `,"signalId":` + jsonString(id) + `}`
		var res api.AcceptedSignalResult
		if rpc {
			r := s.rpcOK(t, exchange{path: "/rpc", body: rpcCall("signal.send", signalParams(runID, body))})
			require.NoError(t, json.Unmarshal(r.Result, &res))
		} else {
			a := s.send(t, exchange{path: signalsPath(runID), body: []byte(body)})
			require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
			require.NoError(t, json.Unmarshal(a.body, &res))
		}
		require.Equal(t, id, res.SignalID)
		require.Equal(t, name, res.SignalName)

		var stored string
		require.NoError(t, s.db.Pool.QueryRow(context.Background(), `SELECT signal_id FROM signal_acceptances
			WHERE run_id = $1 AND signal_name = $2 AND signal_id = $3`, runID, name, id).Scan(&stored))
		require.Equal(t, id, stored)
		evs, err := eventlog.New(s.db.Pool).EventsFetchAfter(context.Background(), runID, 0, 1000)
		require.NoError(t, err)
		var data events.SignalAcceptedData
		require.NoError(t, evs[len(evs)-1].Data(&data))
		require.Equal(t, events.SignalAccepted, evs[len(evs)-1].EventType)
		require.Equal(t, id, data.SignalID)
		require.Equal(t, name, data.SignalName)

		after := s.counts(t)
		require.Equal(t, before.acceptances+1, after.acceptances, "one signal accepted, nothing deleted")
		require.Equal(t, before.events+1, after.events)
		require.Equal(t, before.requests, after.requests)
	}
	t.Run("signalId over REST", func(t *testing.T) { accept(t, "go", "'; DROP TABLE run_events; --", false) })
	t.Run("signalId over JSON-RPC", func(t *testing.T) { accept(t, "go", `"); DELETE FROM signal_acceptances; --`, true) })
	t.Run("signalName with a quote", func(t *testing.T) { accept(t, "go'--", "q", false) })
	t.Run("signalName of SQL", func(t *testing.T) {
		body := `{"signalName":"'; DROP TABLE run_events; --","signalId":"x"}`
		s.requireRefusedREST(t, exchange{path: signalsPath(runID), body: []byte(body)}, invalidArgument, "signalName must not contain whitespace")
		s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("signal.send", signalParams(runID, body))},
			invalidArgument, "signalName must not contain whitespace", rpcID)
	})
	t.Run("environmentId with SQL", func(t *testing.T) {
		const env = `dev'),('globex','p','dev`
		before := s.counts(t)
		a := s.send(t, exchange{path: "/v1/runs", body: []byte(strings.Replace(goodStart, `"dev"`, jsonString(env), 1))})
		require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
		var res api.StartRunResult
		require.NoError(t, json.Unmarshal(a.body, &res))
		var stored string
		require.NoError(t, s.db.Pool.QueryRow(context.Background(), `SELECT environment_id FROM run_requests WHERE run_id = $1`, res.RunID).Scan(&stored))
		require.Equal(t, env, stored)
		require.Equal(t, before.requests+1, s.counts(t).requests)
	})
	for _, table := range []string{"run_events", "outbox", "signal_acceptances", "run_requests"} {
		var exists bool
		require.NoError(t, s.db.Pool.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists))
		require.True(t, exists, "table %s still exists", table)
	}
}

// A bad run id in a REST path is named as the path names it: runId.
func TestRESTBadPathRunIDIsNamedRunID(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	a := s.send(t, exchange{path: signalsPath("not-a-run"), body: []byte(`{"signalName":"go"}`)})
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodeInvalidArgument, e.Code)
	require.Equal(t, "runId", e.Details["field"])
	require.Contains(t, e.Message, `runId must be a run id (a UUID in canonical, lowercase form), not "not-a-run"`)
}
