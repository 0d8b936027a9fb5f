package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/outbox/outboxtest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	activityworker "github.com/weftrun/weft/services/activity-worker"
	"github.com/weftrun/weft/services/engine"
	"github.com/weftrun/weft/services/projector"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

func TestMain(m *testing.M) { weftest.Main(m) }

const (
	operatorToken = "weft_trace_operator"
	waitFor       = 30 * time.Second
	// planDoc runs echo, waits for signal "go", then runs echo again.
	planDoc = `{"planId":"traced","planVersion":"1","steps":[{"id":"a","activity":"echo","input":{"message":"a"}},` +
		`{"id":"w","kind":"waitSignal","signal":"go","dependsOn":["a"]},` +
		`{"id":"b","activity":"echo","input":{"message":"b"},"dependsOn":["w"]}]}`
)

// TestSpanChainFollowsRunAndSignal starts the whole stack in one process
// with one in-memory span exporter, starts a run over REST with a
// traceparent, then signals it with another, and checks that each trace
// crosses every hop: gateway → outbox publish → engine round → outbox
// publish → worker activity → engine round → outbox publish → projector.
func TestSpanChainFollowsRunAndSignal(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	base := startStack(t, tp).url

	runCaller := weftest.RemoteParent(t, "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
	status, body := post(t, base+"/v1/runs", runCaller, map[string]any{"tenantId": "acme", "projectId": "p",
		"environmentId": "dev", "planId": "traced", "planVersion": "1", "runRequestId": events.NewRunID(),
		"plan": json.RawMessage(planDoc), "input": map[string]any{}})
	require.Equal(t, http.StatusCreated, status, "%s", body)
	var run api.StartRunResult
	require.NoError(t, json.Unmarshal(body, &run))

	// StepCompleted of a was decided by the round that took the worker's
	// result; by then the run waits for the signal.
	runChain := waitChain(t, exp, runCaller, string(events.StepCompleted))
	require.Equal(t, []string{"gateway POST /v1/runs", "outbox publish", "engine round", "outbox publish",
		"activity echo", "engine round", "outbox publish", "projector apply"}, names(runChain))

	signalCaller := weftest.RemoteParent(t, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
	status, body = post(t, base+"/v1/runs/"+run.RunID+"/signals", signalCaller,
		map[string]any{"signalName": "go", "signalId": "go-1", "payload": map[string]any{}})
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	signalChain := waitChain(t, exp, signalCaller, string(events.RunCompleted))
	require.Equal(t, []string{"gateway POST /v1/runs/{runId}/signals", "outbox publish", "engine round", "outbox publish",
		"activity echo", "engine round", "outbox publish", "projector apply"}, names(signalChain))

	require.Equal(t, trace.SpanKindServer, runChain[0].SpanKind)
	require.Equal(t, run.RunID, attr(runChain[2], "weft.run_id"))
	require.Equal(t, run.RunID, attr(signalChain[4], "weft.run_id"))
	require.Equal(t, "b", attr(signalChain[4], "weft.step_id"))
}

// post sends body as JSON with the operator's token and caller's
// traceparent, and returns the status and body of the answer.
func post(t *testing.T, url string, caller trace.SpanContext, body any) (int, []byte) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+caller.TraceID().String()+"-"+caller.SpanID().String()+"-01")
	return send(t, req)
}

// send sends req and returns the answer's status and body.
func send(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// waitChain waits until the exporter holds a projector span of eventType
// in caller's trace whose ancestors all ended and reach back to a span
// whose parent is caller, and returns that chain, root first.
func waitChain(t *testing.T, exp *tracetest.InMemoryExporter, caller trace.SpanContext, eventType string) tracetest.SpanStubs {
	t.Helper()
	var chain tracetest.SpanStubs
	require.Eventually(t, func() bool {
		chain = findChain(exp.GetSpans(), caller, eventType)
		return chain != nil
	}, waitFor, 10*time.Millisecond, "no complete span chain for %s in trace %s", eventType, caller.TraceID())
	for _, s := range chain {
		require.Equal(t, caller.TraceID(), s.SpanContext.TraceID(), "span %q", s.Name)
	}
	return chain
}

func findChain(spans tracetest.SpanStubs, caller trace.SpanContext, eventType string) tracetest.SpanStubs {
	byID := make(map[trace.SpanID]tracetest.SpanStub, len(spans))
	for _, s := range spans {
		if s.SpanContext.TraceID() == caller.TraceID() {
			byID[s.SpanContext.SpanID()] = s
		}
	}
	for _, leaf := range byID {
		// A batch's span names its types, comma-separated (streams.EventBatch).
		if leaf.Name != "projector apply" || !slices.Contains(strings.Split(attr(leaf, "weft.event_type"), ","), eventType) {
			continue
		}
		var chain tracetest.SpanStubs
		for s, ok := leaf, true; ok; s, ok = byID[s.Parent.SpanID()] {
			chain = append(tracetest.SpanStubs{s}, chain...)
		}
		if chain[0].Parent.SpanID() == caller.SpanID() {
			return chain
		}
	}
	return nil
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestSpanChainFollowsNATSIngress starts a run by a NATS request on the
// gateway's ingress subject, with a traceparent header: the trace begins at
// the gateway's NATS span and crosses the same hops as over HTTP.
func TestSpanChainFollowsNATSIngress(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	nc := startStack(t, tp).nc

	caller := weftest.RemoteParent(t, "5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b8")
	body, err := json.Marshal(map[string]any{"tenantId": "acme", "projectId": "p", "environmentId": "dev",
		"planId": "traced", "planVersion": "1", "runRequestId": events.NewRunID(),
		"plan": json.RawMessage(planDoc), "input": map[string]any{}})
	require.NoError(t, err)
	msg := nats.NewMsg(streams.RunStartSubject)
	msg.Data = body
	msg.Header.Set("Authorization", "Bearer "+operatorToken)
	msg.Header.Set("traceparent", "00-"+caller.TraceID().String()+"-"+caller.SpanID().String()+"-01")
	// The gateway subscribes as it starts serving: until it has, the
	// request finds no responder and is sent again.
	var reply *nats.Msg
	require.Eventually(t, func() bool {
		reply, err = nc.RequestMsg(msg, waitFor)
		return !errors.Is(err, nats.ErrNoResponders)
	}, waitFor, 10*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, "201", reply.Header.Get("Weft-Status"), "%s", reply.Data)

	chain := waitChain(t, exp, caller, string(events.StepCompleted))
	require.Equal(t, []string{"gateway nats", "outbox publish", "engine round", "outbox publish",
		"activity echo", "engine round", "outbox publish", "projector apply"}, names(chain))
	require.Equal(t, streams.RunStartSubject, attr(chain[0], "messaging.destination.name"))
}

// stack is a whole system of a test: the gateway's base URL, a NATS
// connection to its bus, and its database.
type stack struct {
	url string
	nc  *nats.Conn
	db  *weftest.DB
}

// startStack runs the relay, engine, activity worker, projector and
// gateway over a fresh database and JetStream, all traced by tp, until the
// test ends.
func startStack(t *testing.T, tp trace.TracerProvider) stack {
	t.Helper()
	db, srv := weftest.NewDB(t), weftest.NewNATS(t)
	js := srv.JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 64 << 20}))

	outboxtest.StartRelay(t, db.Pool, js, outbox.RelayConfig{TracerProvider: tp})

	eng, err := engine.New(db.Pool, srv.Conn(t), engine.Config{TracerProvider: tp})
	require.NoError(t, err)
	runUntilCleanup(t, eng.Run)

	w, err := activityworker.New(srv.Conn(t), activityworker.Config{TracerProvider: tp})
	require.NoError(t, err)
	runUntilCleanup(t, w.Run)

	keys, err := auth.NewKeys(auth.Key{Name: "op", TenantID: "acme", Role: auth.RoleOperator, Hash: auth.HashKey(operatorToken)})
	require.NoError(t, err)
	proj, err := projector.New(db.Pool, srv.Conn(t), projector.Config{Keys: keys, TracerProvider: tp})
	require.NoError(t, err)
	projLn := listen(t)
	runUntilCleanup(t, func(ctx context.Context) error { return proj.Serve(ctx, projLn) })

	gw, err := gateway.New(db.Pool, srv.Conn(t), gateway.Config{Keys: keys, TracerProvider: tp})
	require.NoError(t, err)
	ln := listen(t)
	runUntilCleanup(t, func(ctx context.Context) error { return gw.Serve(ctx, ln) })
	return stack{url: "http://" + ln.Addr().String(), nc: srv.Conn(t), db: db}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// runUntilCleanup runs run in the background and, when the test ends,
// cancels its ctx and requires it to return nil.
func runUntilCleanup(t *testing.T, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}
