package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// Tokens of the test keys: an operator and a viewer of acme, and an admin
// of another tenant.
const (
	operatorToken = "weft_test_operator"
	viewerToken   = "weft_test_viewer"
	strangerToken = "weft_test_stranger"
)

const planDoc = `{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"echo"},{"id":"w","kind":"waitSignal","signal":"go","dependsOn":["a"]}]}`

// stack is a gateway serving HTTP on a loopback port and the NATS ingress,
// over a fresh database and an embedded NATS server.
type stack struct {
	db   *weftest.DB
	nc   *nats.Conn
	base string // http://127.0.0.1:port
}

func setup(t *testing.T, cfg gateway.Config) *stack {
	t.Helper()
	db := weftest.NewDB(t)
	return setupOn(t, db, db.Pool, cfg)
}

// setupOn is setup over db, the gateway writing through pool.
func setupOn(t *testing.T, db *weftest.DB, pool *pgxpool.Pool, cfg gateway.Config) *stack {
	t.Helper()
	nc := weftest.NewNATS(t).Conn(t)
	cfg.Keys = testKeys(t)
	svc, err := gateway.New(pool, nc, cfg)
	require.NoError(t, err)
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	s := &stack{db: db, nc: nc, base: "http://" + ln.Addr().String()}
	s.waitReady(t)
	return s
}

// testKeys are the keys of the test tokens.
func testKeys(t *testing.T) *auth.Keys {
	t.Helper()
	keys, err := auth.NewKeys(
		auth.Key{Name: "op", TenantID: "acme", Role: auth.RoleOperator, Hash: auth.HashKey(operatorToken)},
		auth.Key{Name: "viewer", TenantID: "acme", Role: auth.RoleViewer, Hash: auth.HashKey(viewerToken)},
		auth.Key{Name: "stranger", TenantID: "globex", Role: auth.RoleAdmin, Hash: auth.HashKey(strangerToken)},
	)
	require.NoError(t, err)
	return keys
}

func (s *stack) waitReady(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := s.do(t, http.MethodGet, "/healthz", "", nil)
		return err == nil && resp.status == http.StatusNoContent
	}, 10*time.Second, 10*time.Millisecond)
}

// answer is an HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// errorBody decodes the answer as the REST error shape.
func (a answer) errorBody(t *testing.T) api.Error {
	t.Helper()
	var b api.ErrorBody
	require.NoError(t, json.Unmarshal(a.body, &b), "%s", a.body)
	require.NotEmpty(t, b.Error.Code, "%s", a.body)
	return b.Error
}

// do sends a request with the token (none when empty) and a JSON body.
func (s *stack) do(t *testing.T, method, path, token string, body []byte, headers ...string) (answer, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.base+path, bytes.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// post sends a JSON POST as the operator and requires a transport success.
func (s *stack) post(t *testing.T, path string, body any, headers ...string) answer {
	t.Helper()
	raw, ok := body.([]byte)
	if !ok {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	a, err := s.do(t, http.MethodPost, path, operatorToken, raw, headers...)
	require.NoError(t, err)
	return a
}

func startBody(requestID string) map[string]any {
	return map[string]any{"tenantId": "acme", "projectId": "p", "environmentId": "dev", "planId": "hello",
		"planVersion": "1", "runRequestId": requestID, "plan": json.RawMessage(planDoc), "input": map[string]any{"n": 1}}
}

// run starts a run over REST and returns its id.
func (s *stack) run(t *testing.T) string {
	t.Helper()
	a := s.post(t, "/v1/runs", startBody(events.NewRunID()))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	var res api.StartRunResult
	require.NoError(t, json.Unmarshal(a.body, &res))
	return res.RunID
}

// counts is the number of rows of every table a request may write.
type counts struct{ events, outbox, acceptances, requests int }

func (s *stack) counts(t *testing.T) counts {
	t.Helper()
	var c counts
	err := s.db.Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM run_events), (SELECT count(*) FROM outbox),
		(SELECT count(*) FROM signal_acceptances), (SELECT count(*) FROM run_requests)`).
		Scan(&c.events, &c.outbox, &c.acceptances, &c.requests)
	require.NoError(t, err)
	return c
}
