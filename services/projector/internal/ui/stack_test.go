package ui_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/testkit/browsertest"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/outbox/outboxtest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/projector"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// stackTenant is the tenant of the keys of a stack (token, viewerToken).
const stackTenant = "acme"

// stack is a page over the real thing, not the fake API: a fresh Postgres
// database and JetStream, the outbox relay, the gateway, and the
// projector, whose read API, gateway route and UI the browser talks to
// through a recorder of the requests they are sent. The keys are token
// (operator) and viewerToken (viewer), both of stackTenant.
type stack struct {
	*bundle
	// client talks to the gateway and, for reads, to the projector, with
	// the operator's key.
	client *client.Client
	rec    *recorder
	db     *weftest.DB
}

// setupStack starts a stack and a browser; everything stops when the test
// ends.
func setupStack(t *testing.T) *stack {
	t.Helper()
	db, srv := weftest.NewDB(t), weftest.NewNATS(t)
	require.NoError(t, streams.Ensure(t.Context(), srv.JetStream(t), streams.Config{MaxBytes: 64 << 20}))
	outboxtest.StartRelay(t, db.Pool, srv.JetStream(t), outbox.RelayConfig{})
	keys, err := auth.NewKeys(
		auth.Key{Name: "op", TenantID: stackTenant, Role: auth.RoleOperator, Hash: auth.HashKey(token)},
		auth.Key{Name: "viewer", TenantID: stackTenant, Role: auth.RoleViewer, Hash: auth.HashKey(viewerToken)})
	require.NoError(t, err)

	gw, err := gateway.New(db.Pool, srv.Conn(t), gateway.Config{Keys: keys})
	require.NoError(t, err)
	gwLn := listen(t)
	serveUntilCleanup(t, func(ctx context.Context) error { return gw.Serve(ctx, gwLn) })
	gatewayURL := "http://" + gwLn.Addr().String()

	proj, err := projector.New(db.Pool, srv.Conn(t), projector.Config{Keys: keys, GatewayURL: gatewayURL})
	require.NoError(t, err)
	projLn := listen(t)
	serveUntilCleanup(t, func(ctx context.Context) error { return proj.Serve(ctx, projLn) })

	rec := &recorder{}
	front := httptest.NewServer(rec.wrap(proj.Handler()))
	t.Cleanup(front.Close)
	c, err := client.New(gatewayURL, client.WithToken(token), client.WithReadURL(front.URL))
	require.NoError(t, err)
	ctx, console := browsertest.New(t)
	return &stack{bundle: &bundle{t: t, url: front.URL, ctx: ctx, console: console}, client: c, rec: rec, db: db}
}

// recorder keeps the method and path of every request its handler is sent.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.calls = append(r.calls, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

// count returns how many requests were "METHOD /path".
func (r *recorder) count(call string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c == call {
			n++
		}
	}
	return n
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// serveUntilCleanup runs serve in the background and, when the test ends,
// cancels its ctx and requires it to return nil.
func serveUntilCleanup(t *testing.T, serve func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}
