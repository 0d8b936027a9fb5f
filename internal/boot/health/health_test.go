package health_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

func ok(name string) health.Check {
	return health.Check{Name: name, Run: func(context.Context) error { return nil }}
}

func failing(name, msg string) health.Check {
	return health.Check{Name: name, Run: func(context.Context) error { return errors.New(msg) }}
}

// serve answers one request to path on a mux with p registered.
func serve(t *testing.T, p *health.Probes, path string) (int, health.Report) {
	t.Helper()
	mux := http.NewServeMux()
	p.Register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var r health.Report
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &r), rec.Body.String())
	return rec.Code, r
}

func TestReadyzAnswers200WithEveryCheck(t *testing.T) {
	t.Parallel()
	p, err := health.New(0, ok("postgres"), ok("nats"))
	require.NoError(t, err)
	code, r := serve(t, p, "/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, health.Report{Status: "ok", Checks: []health.CheckResult{
		{Name: "postgres", Status: "ok"}, {Name: "nats", Status: "ok"},
	}}, r)
}

func TestReadyzAnswers503NamingTheFailingChecks(t *testing.T) {
	t.Parallel()
	p, err := health.New(0, ok("postgres"), failing("nats", "connection is CLOSED"), failing("stream WEFT_TASKS", "stream not found"))
	require.NoError(t, err)
	code, r := serve(t, p, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "unavailable", r.Status)
	require.Equal(t, []string{"nats", "stream WEFT_TASKS"}, r.Failing)
	require.Equal(t, []health.CheckResult{
		{Name: "postgres", Status: "ok"},
		{Name: "nats", Status: "failing", Error: "connection is CLOSED"},
		{Name: "stream WEFT_TASKS", Status: "failing", Error: "stream not found"},
	}, r.Checks)
}

func TestHealthzChecksNothing(t *testing.T) {
	t.Parallel()
	p, err := health.New(0, failing("postgres", "down"))
	require.NoError(t, err)
	code, r := serve(t, p, "/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok", r.Status)
}

// A check that does not answer is cut off by the timeout and reported as
// failing; the others still report.
func TestCheckThatHangsFailsAtTheTimeout(t *testing.T) {
	t.Parallel()
	hang := health.Check{Name: "postgres", Run: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	p, err := health.New(10*time.Millisecond, hang, ok("nats"))
	require.NoError(t, err)
	r := p.Check(t.Context())
	require.False(t, r.Ready())
	require.Equal(t, []string{"postgres"}, r.Failing)
	require.Contains(t, r.Checks[0].Error, "no answer within 10ms")
	require.Equal(t, "ok", r.Checks[1].Status)
}

func TestNewRefusesAnUnnamedCheck(t *testing.T) {
	t.Parallel()
	_, err := health.New(0, health.Check{Run: func(context.Context) error { return nil }})
	require.Error(t, err)
	_, err = health.New(0, health.Check{Name: "x"})
	require.Error(t, err)
}

// The real checks against a real Postgres and an embedded NATS: each
// passes while its dependency answers and fails, named, when it does not.
func TestChecksAgainstRealDependencies(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	srv := weftest.NewNATS(t)
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)

	p, err := health.New(0, health.Postgres(db.Pool), health.NATS(nc), health.Stream(js, streams.TasksStream))
	require.NoError(t, err)
	r := p.Check(t.Context())
	require.Equal(t, []string{"stream WEFT_TASKS"}, r.Failing, "no streams yet")
	require.Equal(t, "stream not found", r.Checks[2].Error)

	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{}))
	r = p.Check(t.Context())
	require.True(t, r.Ready(), "%+v", r)

	srv.Stop()
	r = p.Check(t.Context())
	require.Equal(t, []string{"nats", "stream WEFT_TASKS"}, r.Failing)
}

// The consumer check fails, naming the consumer, while it is missing:
// before it is created, after it is deleted, and with its stream gone.
func TestConsumerCheckNamesAMissingConsumer(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{}))
	cc, err := streams.TaskConsumer("q", 0)
	require.NoError(t, err)
	p, err := health.New(0, health.Consumer(js, streams.TasksStream, cc.Durable))
	require.NoError(t, err)

	code, r := serve(t, p, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, []string{"consumer tasks-q"}, r.Failing)
	require.Equal(t, "consumer not found on stream WEFT_TASKS", r.Checks[0].Error)

	_, err = js.CreateOrUpdateConsumer(t.Context(), streams.TasksStream, cc)
	require.NoError(t, err)
	code, _ = serve(t, p, "/readyz")
	require.Equal(t, http.StatusOK, code)

	require.NoError(t, js.DeleteStream(t.Context(), streams.TasksStream))
	code, r = serve(t, p, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "stream WEFT_TASKS not found", r.Checks[0].Error)
}
