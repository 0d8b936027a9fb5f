package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// A keyed activity with a verify hook. The task is a retry (logical
// attempt 2) of a step whose plan sets an idempotencyKey; the engine holds
// no record of the attempt, so the worker asks the hook, which finds the
// charge already made and returns its receipt: the step completes with it
// and the activity does not run again. The example plays the engine too.
func ExampleWithVerify() {
	js, shutdown, err := exampleNATS()
	if err != nil {
		log.Fatal(err)
	}
	defer shutdown()
	if err := serveCharge(context.Background(), js); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// verify order-42, fencing token 2
	// StepCompleted, reconciled by verify: {"receipt":"r-1"}
}

func serveCharge(ctx context.Context, js jetstream.JetStream) error {
	// The engine's lookup: no record of any operation.
	sub, err := js.Conn().QueueSubscribe(streams.ReconcileSubject, streams.ReconcileQueue, func(m *nats.Msg) {
		reply, _ := json.Marshal(task.ReconcileReply{SchemaVersion: task.SchemaVersion})
		_ = m.Respond(reply)
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()

	w, err := worker.New(js, worker.Config{})
	if err != nil {
		return err
	}
	charge := func(context.Context, worker.Input) (worker.Output, error) {
		return worker.Output{}, fmt.Errorf("the charge must not run again")
	}
	verify := func(_ context.Context, in worker.Input) (worker.Verification, error) {
		fmt.Printf("verify %s, fencing token %d\n", in.IdempotencyKey, in.FencingToken)
		out, err := worker.NewOutput(map[string]string{"receipt": "r-1"}) // what the payment service says
		return worker.Verification{State: worker.VerifyCompletedWithResult, Result: &out}, err
	}
	if err := w.Register("charge", charge, worker.WithVerify(verify)); err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = w.Stop(ctx) }()

	t := task.Task{
		SchemaVersion: task.SchemaVersion, RunID: "01a20764-6c7f-73b6-92a4-fbca6d5c9f11", StepID: "pay",
		LogicalAttemptID: "2", PlanVersion: "v1", Activity: "charge", Queue: "default",
		IdempotencyKey: "order-42", OperationID: task.OperationID("pay", "2"), FencingToken: 2, TimeoutMillis: 10_000,
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := js.Publish(ctx, "weft.tasks.default", data); err != nil {
		return err
	}
	filter, err := streams.RunResultsFilter(t.RunID) // weft.results.*.<runId>, whatever its partition
	if err != nil {
		return err
	}
	results, err := js.OrderedConsumer(ctx, streams.ResultsStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return err
	}
	for {
		msg, err := results.Next()
		if err != nil {
			return err
		}
		var r task.Result
		if err := json.Unmarshal(msg.Data(), &r); err != nil {
			return err
		}
		if r.Kind != task.Started {
			fmt.Printf("%s, reconciled by %s: %s\n", r.Kind, r.Reconcile.ReconciledBy, r.Output)
			return nil
		}
	}
}
