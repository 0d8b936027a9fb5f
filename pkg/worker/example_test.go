package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/boot/natsboot"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// A worker serving the default queue with one activity, "greet". The
// example plays the engine too: it publishes a task and reads the results.
func Example() {
	js, shutdown, err := exampleNATS()
	if err != nil {
		log.Fatal(err)
	}
	defer shutdown()
	if err := serveGreet(context.Background(), js); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// StepCompleted (delivery 1): {"greeting":"hello, Ada"}
}

func serveGreet(ctx context.Context, js jetstream.JetStream) error {
	w, err := worker.New(js, worker.Config{Queue: "default", Concurrency: 2})
	if err != nil {
		return err
	}
	err = w.Register("greet", func(ctx context.Context, in worker.Input) (worker.Output, error) {
		var req struct {
			Name string `json:"name"`
		}
		if err := in.Decode(&req); err != nil {
			return worker.Output{}, worker.NonRetryable("BAD_INPUT", err.Error())
		}
		return worker.NewOutput(map[string]string{"greeting": "hello, " + req.Name})
	}, worker.WithTimeout(time.Minute))
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = w.Stop(ctx) }()

	// What the engine sends.
	t := task.Task{
		SchemaVersion: task.SchemaVersion, RunID: "01a20764-6c7f-73b6-92a4-fbca6d5c9f11", StepID: "greet",
		LogicalAttemptID: "1", PlanVersion: "v1", Activity: "greet", Queue: "default",
		Input: json.RawMessage(`{"name": "Ada"}`), IdempotencyKey: "greet-ada", TimeoutMillis: 10_000,
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := js.Publish(ctx, "weft.tasks.default", data); err != nil {
		return err
	}

	// What the engine reads.
	filter, err := streams.RunResultsFilter(t.RunID) // weft.results.*.<runId>, whatever its partition
	if err != nil {
		return err
	}
	results, err := js.OrderedConsumer(ctx, streams.ResultsStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return err
	}
	// An activity that ends within Config.StartedAfter reports its outcome
	// alone; a longer one reports StepStarted first, skipped here.
	for {
		msg, err := results.Next()
		if err != nil {
			return err
		}
		var r task.Result
		if err := json.Unmarshal(msg.Data(), &r); err != nil {
			return err
		}
		switch r.Kind {
		case task.Completed:
			fmt.Printf("%s (delivery %s): %s\n", r.Kind, r.EngineAttemptID, r.Output)
			return nil
		case task.Failed:
			fmt.Printf("%s (delivery %s): %s\n", r.Kind, r.EngineAttemptID, r.Error.Message)
			return nil
		case task.Started:
		}
	}
}

// exampleNATS starts an embedded JetStream server with Weft's streams and
// returns a JetStream context on it and the function that shuts it down.
func exampleNATS() (jetstream.JetStream, func(), error) {
	dir, err := os.MkdirTemp("", "weft-worker-example")
	if err != nil {
		return nil, nil, err
	}
	srv, err := natsboot.Start(natsboot.Config{StoreDir: dir, Port: -1})
	if err != nil {
		return nil, nil, err
	}
	shutdown := func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		shutdown()
		return nil, nil, err
	}
	closeAll := func() { nc.Close(); shutdown() }
	js, err := jetstream.New(nc)
	if err == nil {
		err = streams.Ensure(context.Background(), js, streams.Config{MaxBytes: 64 << 20})
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return js, closeAll, nil
}
