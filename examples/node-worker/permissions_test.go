package nodeworker_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/examples/internal/devstacktest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
)

// passwordVar is a password variable of deploy/nats.conf.
var passwordVar = regexp.MustCompile(`\$WEFT_NATS_([A-Z_]+)_PASSWORD`)

// underAWorkerUsersPermissions runs the worker as deploy/nats.conf's user
// "worker", allowed the queue "default" and nothing more, on a real
// nats-server from that file, with the test playing the engine and the
// relay as their own users. Two tasks, one on the tenant lane "acme" and
// one of no tenant, complete with the Node worker's output and their
// task's token; a task whose run has a cancel notice is not started. Each
// of these steps uses a JetStream API subject the user must be allowed
// (docs/worker-protocol.md, "What a worker's NATS user may do"), and a
// refused one would leave its task unanswered.
func underAWorkerUsersPermissions(t *testing.T, dir string) {
	srv := startDeployNATS(t)
	relay := connectAs(t, srv, "relay")
	engine := connectAs(t, srv, "engine")
	require.NoError(t, streams.EnsureTaskLanes(t.Context(), engine, streams.Config{}, "default"))

	cancel, err := json.Marshal(task.Cancel{SchemaVersion: task.SchemaVersion, RunID: "run-cancelled", Reason: "cancelled by the test"})
	require.NoError(t, err)
	_, err = relay.Publish(t.Context(), "weft.cancel.run-cancelled", cancel)
	require.NoError(t, err)
	for runID, subject := range map[string]string{
		"run-cancelled": "weft.tasks.default.acme", "run-lane": "weft.tasks.default.acme", "run-plain": "weft.tasks.default",
	} {
		publishTask(t, relay, subject, runID)
	}

	workerURL := url.URL{Scheme: "nats", User: url.UserPassword("worker", "pw-WORKER"), Host: srv.Addr().String()}
	logs := startWorker(t, dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"WEFT_NATS_URL=" + workerURL.String(), "WEFT_QUEUE=default"})

	completed := map[string]task.Result{}
	results := engineResults(t, engine)
	for len(completed) < 2 {
		msg, err := results.Next(jetstream.FetchMaxWait(devstacktest.Step))
		require.NoError(t, err, "a result within %v; node worker:\n%s", devstacktest.Step, logs.String())
		var r task.Result
		require.NoError(t, json.Unmarshal(msg.Data(), &r))
		require.NoError(t, msg.Ack())
		require.NotEqual(t, "run-cancelled", r.RunID, "a cancelled run's task is not started: %s", msg.Data())
		if r.Kind == task.Completed {
			completed[r.RunID] = r
		}
	}
	for _, runID := range []string{"run-lane", "run-plain"} {
		r := completed[runID]
		require.Equal(t, "token-of-"+runID, r.Token, "the task's token, unchanged")
		var out struct {
			Words     int    `json:"words"`
			Longest   string `json:"longest"`
			CountedBy string `json:"countedBy"`
		}
		require.NoError(t, json.Unmarshal(r.Output, &out))
		require.Equal(t, 3, out.Words, "%s", r.Output)
		require.Equal(t, "permissions", out.Longest)
		require.True(t, strings.HasPrefix(out.CountedBy, "node v"), "%s", r.Output)
	}
	waitForLog(t, logs, `"msg":"worker: attempt not started, its run is cancelled"`)
	require.NotContains(t, logs.String(), "pull failed", "no request was refused")
}

// startDeployNATS runs an embedded nats-server from deploy/nats.conf, each
// user's password "pw-<USER>", on a free loopback port with a store of its
// own, and creates Weft's streams as the user migrate.
func startDeployNATS(t *testing.T) *server.Server {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(devstacktest.Root(t), "deploy", "nats.conf"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "nats.conf")
	require.NoError(t, os.WriteFile(path, passwordVar.ReplaceAll(conf, []byte(`"pw-$1"`)), 0o600))
	srv := weftest.NATSFromConf(t, path)
	require.NoError(t, streams.Ensure(t.Context(), connectAs(t, srv, "migrate"), streams.Config{}))
	return srv
}

// connectAs connects to srv as a user of deploy/nats.conf, with its
// services' reply prefix, _INBOX_<user>.
func connectAs(t *testing.T, srv *server.Server, user string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, "pw-"+strings.ToUpper(user)),
		nats.CustomInboxPrefix("_INBOX_"+user))
	require.NoError(t, err, user)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// publishTask publishes, as the relay does, a task of runID for the
// activity word-stats on subject.
func publishTask(t *testing.T, relay jetstream.JetStream, subject, runID string) {
	t.Helper()
	b, err := json.Marshal(task.Task{SchemaVersion: task.SchemaVersion, RunID: runID, StepID: "count",
		LogicalAttemptID: "1", PlanVersion: "1", Activity: "word-stats", Queue: "default",
		Input: json.RawMessage(`{"text": "under worker permissions"}`), IdempotencyKey: "key-of-" + runID,
		TimeoutMillis: 60_000, ScheduledAt: time.Now().UTC(), Token: "token-of-" + runID})
	require.NoError(t, err)
	_, err = relay.Publish(t.Context(), subject, b)
	require.NoError(t, err, subject)
}

// engineResults is a durable consumer of every result, named and made as
// the user engine makes its partitions' consumers (FilterSubjects, so the
// create names no filter).
func engineResults(t *testing.T, engine jetstream.JetStream) jetstream.Consumer {
	t.Helper()
	c, err := engine.CreateOrUpdateConsumer(t.Context(), streams.ResultsStream, jetstream.ConsumerConfig{
		Durable: "engine-results-0", FilterSubjects: []string{"weft.results.>"}, AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	return c
}

// waitForLog waits until logs holds want.
func waitForLog(t *testing.T, logs *weftest.Buffer, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), want) },
		devstacktest.Step, 20*time.Millisecond, "node worker:\n%s", logs.String())
}
