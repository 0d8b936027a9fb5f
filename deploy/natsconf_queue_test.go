package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// queueWorkerConf returns nats.conf with a worker user for queue added, made
// as nats.conf tells an operator to: a copy of the worker user's block with
// worker-<queue>, its password variable, its inbox and its queue's
// consumer and subject in place of the default queue's, and its inbox
// beside the default worker's in the engine's publish allow (the engine's
// answers to its reconciliation lookups).
func queueWorkerConf(t *testing.T, queue string) string {
	t.Helper()
	conf, err := os.ReadFile("nats.conf")
	require.NoError(t, err)
	text := string(conf)
	start := strings.Index(text, "      {\n        user: worker\n")
	require.Positive(t, start, "nats.conf has the worker user's block")
	end := start + strings.Index(text[start:], "\n      }\n") + len("\n      }\n")
	block := strings.NewReplacer(
		"user: worker\n", "user: worker-"+queue+"\n",
		"$WEFT_NATS_WORKER_PASSWORD", "$WEFT_NATS_WORKER_"+strings.ToUpper(queue)+"_PASSWORD",
		"_INBOX_worker.", "_INBOX_worker-"+queue+".",
		"tasks-default", "tasks-"+queue,
		"weft.tasks.default", "weft.tasks."+queue,
		"WEFT_TASKS_default", "WEFT_TASKS_"+queue,
	).Replace(text[start:end])
	text = text[:end] + block + text[end:]
	engine := strings.Index(text, "        user: engine\n")
	require.Positive(t, engine, "nats.conf has the engine user's block")
	inbox := strings.Index(text[engine:], `"_INBOX_worker.>"`)
	require.Positive(t, inbox, "the engine may answer the default worker's inbox")
	at := engine + inbox + len(`"_INBOX_worker.>"`)
	return text[:at] + `, "_INBOX_worker-` + queue + `.>"` + text[at:]
}

// startQueueServer runs an embedded nats-server from nats.conf with a
// worker user for queue "batch" beside the default queue's, and Weft's
// streams.
func startQueueServer(t *testing.T) *server.Server {
	t.Helper()
	return startQueueServerFrom(t, queueWorkerConf(t, "batch"))
}

// startQueueServerFrom runs an embedded nats-server from conf, nats.conf
// with the worker user of queue "batch", and Weft's streams.
func startQueueServerFrom(t *testing.T, conf string) *server.Server {
	t.Helper()
	loadNATSConf(t) // sets the users' passwords
	t.Setenv("WEFT_NATS_WORKER_BATCH_PASSWORD", "pw-worker-batch")
	path := filepath.Join(t.TempDir(), "nats.conf")
	require.NoError(t, os.WriteFile(path, []byte(conf), 0o600))
	srv := weftest.NATSFromConf(t, path)
	migrate := connectAs(t, srv, "migrate")
	for _, sc := range []jetstream.StreamConfig{streams.Tasks(streams.Config{}), streams.Results(streams.Config{})} {
		_, err := migrate.CreateOrUpdateStream(t.Context(), sc)
		require.NoError(t, err, sc.Name)
	}
	engine := connectAs(t, srv, "engine")
	for _, q := range []string{"default", "batch"} {
		require.NoError(t, streams.EnsureTaskLanes(t.Context(), engine, streams.Config{}, q), "the engine makes the lanes stream of %s", q)
	}
	return srv
}

// Per-queue worker users (issue #17, item 3): a worker of the queue
// "default" and one of "batch" each take their own queue's tasks, a
// tenant's on its lane included, and neither can create, read, pull from
// or ack the other queue's consumers, queue-wide or a lane's, on a real
// server with pending tasks in it. Not parallel: t.Setenv.
func TestQueueWorkerCannotTakeAnotherQueuesTasks(t *testing.T) {
	srv := startQueueServer(t)
	ctx := t.Context()
	relay := connectAs(t, srv, "relay")
	for _, q := range []string{"default", "batch"} {
		_, err := relay.Publish(ctx, "weft.tasks."+q, []byte(`{"queue":"`+q+`"}`))
		require.NoError(t, err)
		_, err = relay.Publish(ctx, "weft.tasks."+q+".acme", []byte(`{"queue":"`+q+`","lane":"acme"}`))
		require.NoError(t, err, "a tenant's task lands in the queue's lanes stream")
	}
	workers := map[string]jetstream.JetStream{"default": connectAs(t, srv, "worker"), "batch": connectAs(t, srv, "worker-batch")}
	consumers := map[string]jetstream.Consumer{}
	for q, js := range workers {
		cc, err := streams.TaskConsumer(q, 0)
		require.NoError(t, err)
		c, err := js.CreateOrUpdateConsumer(ctx, streams.TasksStream, cc)
		require.NoError(t, err, "the worker of %s creates its consumer", q)
		consumers[q] = c
	}
	lanes := map[string]jetstream.Consumer{}
	for q, js := range workers {
		cc, err := streams.TaskLaneConsumer(q, "acme", 0, 0)
		require.NoError(t, err)
		c, err := js.CreateOrUpdateConsumer(ctx, streams.TaskLanesStream(q), cc)
		require.NoError(t, err, "the worker of %s creates its lane's consumer", q)
		lanes[q] = c
	}

	for q, other := range map[string]string{"default": "batch", "batch": "default"} {
		js := workers[q]
		refused := func(what string, call func(context.Context) error) {
			t.Helper()
			cctx, cancel := context.WithTimeout(ctx, refusedWithin)
			defer cancel()
			require.Error(t, call(cctx), "the worker of %s may not %s of %s", q, what, other)
		}
		refused("create the consumer", func(c context.Context) error {
			cc, err := streams.TaskConsumer(other, 0)
			require.NoError(t, err)
			_, err = js.CreateOrUpdateConsumer(c, streams.TasksStream, cc)
			return err
		})
		refused("read the consumer", func(c context.Context) error {
			_, err := js.Consumer(c, streams.TasksStream, "tasks-"+other)
			return err
		})
		refused("pull from the consumer", func(c context.Context) error {
			_, err := js.Conn().RequestWithContext(c, "$JS.API.CONSUMER.MSG.NEXT.WEFT_TASKS.tasks-"+other, []byte(`{"batch":1,"no_wait":true}`))
			return err
		})
		refused("create a lane consumer", func(c context.Context) error {
			cc, err := streams.TaskLaneConsumer(other, "acme", 0, 0)
			require.NoError(t, err)
			_, err = js.CreateOrUpdateConsumer(c, streams.TaskLanesStream(other), cc)
			return err
		})
		refused("pull from a lane", func(c context.Context) error {
			_, err := js.Conn().RequestWithContext(c, "$JS.API.CONSUMER.MSG.NEXT."+streams.TaskLanesStream(other)+".tasks-"+other+"~acme",
				[]byte(`{"batch":1,"no_wait":true}`))
			return err
		})
		refused("take the queue's tasks in its own consumer", func(c context.Context) error {
			_, err := js.CreateOrUpdateConsumer(c, streams.TasksStream, jetstream.ConsumerConfig{
				Durable: "tasks-" + q, FilterSubject: "weft.tasks." + other, AckPolicy: jetstream.AckExplicitPolicy})
			return err
		})
	}

	// Each queue's tasks are still there for its own worker, and only its.
	for q, c := range consumers {
		batch, err := c.Fetch(1, jetstream.FetchMaxWait(refusedWithin))
		require.NoError(t, err)
		m, ok := <-batch.Messages()
		require.True(t, ok, "the worker of %s takes its task", q)
		require.JSONEq(t, `{"queue":"`+q+`"}`, string(m.Data()))
		require.NoError(t, m.DoubleAck(ctx), "the worker of %s acks its task", q)
	}
	for q, c := range lanes {
		batch, err := c.Fetch(1, jetstream.FetchMaxWait(refusedWithin))
		require.NoError(t, err)
		m, ok := <-batch.Messages()
		require.True(t, ok, "the worker of %s takes its lane's task", q)
		require.JSONEq(t, `{"queue":"`+q+`","lane":"acme"}`, string(m.Data()))
		require.NoError(t, m.DoubleAck(ctx), "the worker of %s acks its lane's task", q)
	}
	require.NoError(t, workers["batch"].Conn().Publish("weft.results.r1", []byte("{}")), "workers report results")
}
