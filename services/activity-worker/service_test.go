package activityworker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
	activityworker "github.com/weftrun/weft/services/activity-worker"
	"github.com/weftrun/weft/services/activity-worker/internal/demo"
)

func TestMain(m *testing.M) { weftest.Main(m) }

const waitFor = 20 * time.Second

// TestServiceRunsDemoActivities runs the service against embedded
// JetStream and sends it a task for each demo activity, as the engine
// would.
func TestServiceRunsDemoActivities(t *testing.T) {
	t.Parallel()
	srv := weftest.NewNATS(t)
	js := srv.JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 64 << 20}))
	var redirectTargetHit atomic.Bool
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/elsewhere":
			redirectTargetHit.Store(true)
		default:
			_, _ = w.Write([]byte("hello, world"))
		}
	}))
	t.Cleanup(web.Close)

	logs := &weftest.Buffer{}
	svc, err := activityworker.New(srv.Conn(t), activityworker.Config{Concurrency: 8, WorkerID: "demo-worker",
		HTTPGetAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Logger:       slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(ctx) }()

	tests := []struct {
		name, activity, input string
		logicalAttempt        string
		timeoutMs             int64
		output                string // JSON; empty when the step fails
		code                  string
		retryable             bool
	}{
		{name: "echo", activity: "echo", input: `{"message":"hi"}`, output: `{"message":"hi"}`},
		{name: "sleep", activity: "sleep", input: `{"ms":5}`, output: `{"sleptMs":5}`},
		{name: "sleep past timeout", activity: "sleep", input: `{"ms":600000}`, timeoutMs: 50, code: "TIMEOUT", retryable: true},
		{name: "sleep bad input", activity: "sleep", input: `{"seconds":1}`, code: demo.CodeInvalidInput},
		{name: "fail first", activity: "fail-n-times", input: `{"times":2,"key":"k"}`, logicalAttempt: "2", code: demo.CodePlannedFailure, retryable: true},
		{name: "fail then pass", activity: "fail-n-times", input: `{"times":2,"key":"k"}`, logicalAttempt: "3", output: `{"key":"k","logicalAttemptId":"3"}`},
		{name: "http-get", activity: "http-get", input: `{"url":"` + web.URL + `/hello"}`, output: `{"status":200,"bodyBytes":12,"truncated":false}`},
		{name: "http-get redirect", activity: "http-get", input: `{"url":"` + web.URL + `/redirect"}`, output: `{"status":302,"bodyBytes":33,"truncated":false}`},
		{name: "http-get bad url", activity: "http-get", input: `{"url":"file:///etc/passwd"}`, code: demo.CodeInvalidInput},
		{name: "http-get refused", activity: "http-get", input: `{"url":"http://127.0.0.1:1/"}`, code: demo.CodeTransport, retryable: true},
		{name: "http-get internal address", activity: "http-get", input: `{"url":"http://127.0.0.2:1/"}`, code: demo.CodeAddressRefused},
		{name: "http-get metadata address", activity: "http-get", input: `{"url":"http://169.254.169.254/latest/meta-data/"}`, code: demo.CodeAddressRefused},
	}
	t.Run("tasks", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				tk := newTask(tt.activity, tt.input)
				tk.LogicalAttemptID = cmp.Or(tt.logicalAttempt, tk.LogicalAttemptID)
				tk.TimeoutMillis = cmp.Or(tt.timeoutMs, tk.TimeoutMillis)
				r := run(t, js, tk)
				require.Equal(t, "demo-worker", r.WorkerID)
				require.Equal(t, "1", r.EngineAttemptID)
				if tt.code == "" {
					require.Equal(t, task.Completed, r.Kind, r.Error)
					require.JSONEq(t, tt.output, string(r.Output))
					return
				}
				require.Equal(t, task.Failed, r.Kind)
				require.Equal(t, tt.code, r.Error.Code, r.Error.Message)
				require.Equal(t, tt.retryable, r.Error.Retryable)
			})
		}
	})
	require.False(t, redirectTargetHit.Load(), "http-get requests only the URL it is given")

	stop()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(waitFor):
		require.FailNow(t, "Run did not return after its context ended")
	}
	require.Contains(t, logs.String(), `"service":"activity-worker"`)
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	nc := weftest.NewNATS(t).Conn(t)
	_, err := activityworker.New(nc, activityworker.Config{Queue: "a.b"})
	require.Error(t, err)
	_, err = activityworker.New(nil, activityworker.Config{})
	require.Error(t, err)
	_, err = activityworker.New(nc, activityworker.Config{})
	require.NoError(t, err, "a nil Logger discards the logs")
}

func newTask(activity, input string) task.Task {
	runID := events.NewRunID()
	return task.Task{
		SchemaVersion: task.SchemaVersion, RunID: runID, StepID: "demo", LogicalAttemptID: "1", PlanVersion: "v1",
		Activity: activity, Queue: "default", Input: json.RawMessage(input), IdempotencyKey: "key-" + runID,
		TimeoutMillis: 30_000, ScheduledAt: time.Now().UTC(),
	}
}

// run publishes tk and returns its final result.
func run(t *testing.T, js jetstream.JetStream, tk task.Task) task.Result {
	t.Helper()
	data, err := json.Marshal(tk)
	require.NoError(t, err)
	_, err = js.PublishMsg(t.Context(), &nats.Msg{Subject: "weft.tasks." + tk.Queue, Data: data},
		jetstream.WithMsgID(task.DedupeID(tk.RunID, tk.StepID, tk.LogicalAttemptID)))
	require.NoError(t, err)
	filter, err := streams.RunResultsFilter(tk.RunID)
	require.NoError(t, err)
	cons, err := js.OrderedConsumer(t.Context(), streams.ResultsStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	for {
		msg, err := cons.Next(jetstream.FetchContext(ctx))
		require.NoError(t, err, "no final result")
		var r task.Result
		require.NoError(t, json.Unmarshal(msg.Data(), &r))
		if r.Kind != task.Started {
			return r
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	got, err := activityworker.ParsePrefixes(" 10.1.2.3/16, 127.0.0.1\tfd12::/64 ")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("fd12::/64"),
	}, got)
	got, err = activityworker.ParsePrefixes("")
	require.NoError(t, err)
	require.Nil(t, got)
	_, err = activityworker.ParsePrefixes("10.0.0.0/8,localhost")
	require.ErrorContains(t, err, `"localhost"`)
}
