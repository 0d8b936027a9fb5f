package doccheck_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/internal/testkit/doccheck"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/projector"
)

// entry is a type the documents' examples may name: new returns a pointer
// to its zero value; or, for a type no test can import, source names the
// Go file that declares it (from the module's root) and the example's keys
// are held to its fields' json names (doccheck.CheckKeysFromSource) of the
// type named sourceType there (default: the marker's name after the dot).
type entry struct {
	new        func() any
	opts       doccheck.Options
	source     string
	sourceType string
}

func of[T any]() entry { return entry{new: func() any { return new(T) }} }

// rpcRequest and rpcResponse are JSON-RPC 2.0's envelopes (the gateway's
// own are unexported), around the real params and results.
type rpcRequest[P any] struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	ID      json.RawMessage `json:"id,omitempty"`
	Params  P               `json:"params"`
}

type rpcResponse[R any] struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *R              `json:"result,omitempty"`
	Error   *struct {
		Code    int       `json:"code"`
		Message string    `json:"message"`
		Data    api.Error `json:"data"`
	} `json:"error,omitempty"`
}

// registry holds every type a marker may name, by the name a reader of
// the docs knows it by.
var registry = map[string]entry{
	"api.ErrorBody":            of[api.ErrorBody](),
	"api.Problem":              of[api.Problem](),
	"api.StartRunRequest":      of[api.StartRunRequest](),
	"api.StartRunResult":       of[api.StartRunResult](),
	"api.SignalRequest":        of[api.SignalRequest](),
	"api.AcceptedSignalResult": of[api.AcceptedSignalResult](),
	"api.ScheduleRequest":      of[api.ScheduleRequest](),
	"api.Schedule":             of[api.Schedule](),
	"api.TriggerRequest":       of[api.TriggerRequest](),
	"api.TriggerEvent":         of[api.TriggerEvent](),
	"api.RunList":              of[api.RunList](),
	"api.RunView":              of[api.RunView](),
	"api.EventPage":            of[api.EventPage](),
	"api.RerunRequest":         of[api.RerunRequest](),
	"api.BulkRequest":          of[api.BulkRequest](),
	"api.BulkJob":              of[api.BulkJob](),
	// A fire's run input is the schedule's own input (any members) with
	// the fire's keys set.
	"api.ScheduleFireInput": {new: func() any { return new(api.ScheduleFireInput) }, opts: doccheck.Options{Open: true}},
	"events.StepDetail":     of[events.StepDetail](),
	"health.Report":         of[health.Report](),
	// GET /v1/alerts answers map[string][]projector.Alert{"alerts": …}.
	"projector.Alerts": of[map[string][]projector.Alert](),
	// weft dev's endpoints.json, written by cmd/weft (package main) with
	// cmd/weft/internal/devfile, which no test here may import.
	"weft.devEndpoints":                          {source: "cmd/weft/internal/devfile/devfile.go", sourceType: "Endpoints"},
	"task.Task":                                  of[task.Task](),
	"task.Result":                                of[task.Result](),
	"task.ReconcileRequest":                      of[task.ReconcileRequest](),
	"task.ReconcileReply":                        of[task.ReconcileReply](),
	"task.Heartbeat":                             of[task.Heartbeat](),
	"task.Cancel":                                of[task.Cancel](),
	"jsonrpc.Request[api.SignalRequest]":         of[rpcRequest[api.SignalRequest]](),
	"jsonrpc.Request[api.StartRunRequest]":       of[rpcRequest[api.StartRunRequest]](),
	"jsonrpc.Response[api.AcceptedSignalResult]": of[rpcResponse[api.AcceptedSignalResult]](),
	"jsonrpc.Response[api.StartRunResult]":       of[rpcResponse[api.StartRunResult]](),
}

// knownWrong holds the examples, by document and type, that this check
// found wrong in documents others were editing, with the fix they need.
// The test requires each to fail: fix the example, then remove its entry.
var knownWrong = map[[2]string]string{}

// documents are the Markdown files whose examples are checked: the README
// and every document of docs/.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	return append([]string{"../../../README.md"}, docs...)
}

// Issue 19: every JSON example of the docs is marked with what it shows,
// and every typed one reads and writes as the real encoder does.
func TestDocumentedJSONExamples(t *testing.T) {
	t.Parallel()
	var checked int
	for _, doc := range documents(t) {
		blocks, err := doccheck.Blocks(doc)
		require.NoError(t, err)
		for _, b := range blocks {
			t.Run(b.Where(), func(t *testing.T) {
				if fix, ok := knownWrong[[2]string{filepath.Base(b.File), b.Type}]; ok {
					require.Error(t, checkBlock(b), "%s is right now: remove its knownWrong entry (%s)", b.Where(), fix)
					return
				}
				require.NoError(t, checkBlock(b), "%s\n%s", b.Where(), b.JSON)
			})
			checked++
		}
	}
	require.Positive(t, checked, "the docs have JSON examples")
}

// checkBlock checks one example as its marker says.
func checkBlock(b doccheck.Block) error {
	switch b.Kind {
	case doccheck.KindFree:
		return doccheck.Check(b.JSON, new(any), doccheck.Options{})
	case doccheck.KindType:
		e, ok := registry[b.Type]
		if !ok {
			return fmt.Errorf("the marker names %q, which the registry of internal/testkit/doccheck's test does not hold", b.Type)
		}
		if e.source != "" {
			_, typ, _ := strings.Cut(b.Type, ".")
			return doccheck.CheckKeysFromSource(b.JSON, filepath.Join("../../..", e.source), cmp.Or(e.sourceType, typ))
		}
		v := e.new()
		if err := doccheck.Check(b.JSON, v, e.opts); err != nil {
			return err
		}
		return checkProblems(b.JSON, v)
	default:
		return fmt.Errorf("no marker: put <!-- type: NAME --> (a type of internal/testkit/doccheck's registry) or <!-- example: free --> on the line above the fence")
	}
}

// checkProblems holds the details.problems of an error example to
// api.Problem: details is a free map, and the problems' keys are the
// ones issue 19 found wrong in the docs.
func checkProblems(example []byte, v any) error {
	body, ok := v.(*api.ErrorBody)
	if !ok || body.Error.Details["problems"] == nil {
		return nil
	}
	var raw struct {
		Error struct {
			Details struct {
				Problems json.RawMessage `json:"problems"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(example, &raw); err != nil {
		return err
	}
	if err := doccheck.Check(raw.Error.Details.Problems, new([]api.Problem), doccheck.Options{}); err != nil {
		return fmt.Errorf("details.problems: %w", err)
	}
	return nil
}

// The check fails what issue 19 found: Go field names for wire names, a
// member the encoder leaves out, an unmarked example, a marker naming no
// known type; and a wrong name or type in the rerun and bulk examples.
func TestCheckCatchesWrongExamples(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ doc, want string }{
		"Go field names": {doc: "<!-- type: api.ErrorBody -->\n```json\n" +
			`{"error": {"code": "InvalidArgument", "message": "m", "details": {"problems": [{"Code": "X", "Field": "f", "Message": "m", "StepID": "a"}]}}}` + "\n```\n",
			want: "unknown field"},
		"capitalised key": {doc: "<!-- type: api.StartRunResult -->\n```json\n{\"RunID\": \"r\"}\n```\n", want: "RunID"},
		"left out by the encoder": {doc: "<!-- type: api.ErrorBody -->\n```json\n{\"error\": {\"code\": \"NotFound\", \"message\": \"m\", \"details\": {}}}\n```\n",
			want: "error.details"},
		"not JSON":     {doc: "<!-- example: free -->\n```json\n{\"plan\": {…}}\n```\n", want: "not JSON"},
		"no marker":    {doc: "Some text:\n\n```json\n{}\n```\n", want: "no marker"},
		"unknown type": {doc: "<!-- type: api.Nope -->\n```json\n{}\n```\n", want: "api.Nope"},
		"a key the source lacks": {doc: "<!-- type: weft.devEndpoints -->\n```json\n{\"gateway\": \"http://x\", \"readAPI\": \"http://y\"}\n```\n",
			want: `keys "readAPI" name no field of Endpoints`},
		"wrong type":                     {doc: "<!-- type: task.Heartbeat -->\n```json\n{\"schemaVersion\": \"one\"}\n```\n", want: "must be an integer"},
		"a rerun's step by another name": {doc: "<!-- type: api.RerunRequest -->\n```json\n{\"fromStep\": \"ship\"}\n```\n", want: "fromStep"},
		"a bulk filter's status as a string": {doc: "<!-- type: api.BulkRequest -->\n```json\n" +
			`{"bulkId": "b", "action": "CANCEL", "filter": {"status": "RUNNING"}}` + "\n```\n", want: "filter.status"},
		"a bulk job's filter by another name": {doc: "<!-- type: api.BulkJob -->\n```json\n" +
			`{"bulkId": "b", "action": "CANCEL", "filter": {"label": {"team": "data"}}, "matched": 1}` + "\n```\n", want: "filter.label"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "doc.md")
			require.NoError(t, os.WriteFile(path, []byte(tc.doc), 0o600))
			blocks, err := doccheck.Blocks(path)
			require.NoError(t, err)
			require.Len(t, blocks, 1)
			require.ErrorContains(t, checkBlock(blocks[0]), tc.want)
		})
	}
}

// Elisions stand for values and members left out; an Open type leaves the
// caller's own members unchecked, but not its own fields' names.
func TestCheckReadsElisions(t *testing.T) {
	t.Parallel()
	require.NoError(t, doccheck.Check([]byte(`{"runs": [{"runId": "…", "createdAt": "…", "…": "…"}]}`), new(api.RunList), doccheck.Options{}))
	fire := `{"report": "daily", "scheduledFor": "2026-03-02T14:00:00Z", "schedule": {"id": "n"}}`
	require.NoError(t, doccheck.Check([]byte(fire), new(api.ScheduleFireInput), doccheck.Options{Open: true}))
	require.ErrorContains(t, doccheck.Check([]byte(fire), new(api.ScheduleFireInput), doccheck.Options{}), "unknown field")
	require.ErrorContains(t, doccheck.Check([]byte(`{"scheduledFor": "…", "schedule": {"ID": "n"}}`), new(api.ScheduleFireInput),
		doccheck.Options{Open: true}), "unknown field")
}
