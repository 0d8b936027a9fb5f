package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/streams"
)

// demoPlan is the dev stack's demo: a fan-out of echo steps joined by a
// last one, with one flaky step that succeeds on its second attempt.
const demoPlan = `{
  "planId": "demo", "planVersion": "1",
  "steps": [
    {"id": "hello", "activity": "echo", "input": {"greeting": "hello"}},
    {"id": "left", "activity": "echo", "dependsOn": ["hello"], "input": {"side": "left"}},
    {"id": "flaky", "activity": "fail-n-times", "dependsOn": ["hello"], "input": {"times": 1},
     "retry": {"maxAttempts": 3, "initialBackoff": "200ms"}},
    {"id": "join", "activity": "echo", "dependsOn": ["left", "flaky"], "input": {"done": true}}
  ]
}`

// demoRun starts the demo plan and logs each of its events as JetStream
// delivers it, until the run ends: a plan approved in Postgres, relayed by
// the outbox, driven by the engine and run by the worker.
func demoRun(ctx context.Context, env *environment, pool *pgxpool.Pool, js jetstream.JetStream) error {
	p, err := plan.ParseValidated([]byte(demoPlan), plan.Limits{})
	if err != nil {
		return fmt.Errorf("demo plan: %w", err)
	}
	runID, err := runstart.Approver{Journal: journal.New(eventlog.New(pool))}.Approve(ctx, pool, runstart.Request{
		TenantID: devTenant, ProjectID: "demo", EnvironmentID: "dev", RunRequestID: "demo-" + time.Now().UTC().Format(time.RFC3339Nano), Plan: p,
	})
	if err != nil {
		return fmt.Errorf("demo: start run: %w", err)
	}
	filter, err := streams.RunEventsFilter(runID)
	if err != nil {
		return err
	}
	cons, err := js.OrderedConsumer(ctx, streams.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return fmt.Errorf("demo: consumer: %w", err)
	}
	done := make(chan events.Type, 1)
	cc, err := cons.Consume(func(m jetstream.Msg) { logDemoEvent(ctx, env, m, done) })
	if err != nil {
		return fmt.Errorf("demo: consume: %w", err)
	}
	defer cc.Stop()
	env.logger.InfoContext(ctx, "demo run started", "run_id", runID)
	select {
	case end := <-done:
		env.logger.InfoContext(ctx, "demo run finished", "run_id", runID, "outcome", end)
		return nil
	case <-ctx.Done():
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("demo: run %s did not finish within a minute", runID)
	}
}

// logDemoEvent logs the events of one relayed message, of either form
// (streams.DecodeEvents), and reports the run's end on done.
func logDemoEvent(ctx context.Context, env *environment, m jetstream.Msg, done chan<- events.Type) {
	evs, err := streams.DecodeEvents(m.Headers(), m.Data())
	if err != nil {
		env.logger.ErrorContext(ctx, "demo: undecodable event", "err", err)
		return
	}
	for _, ev := range evs {
		env.logger.InfoContext(ctx, "relayed event", "run_id", ev.RunID, "run_seq", ev.RunSeq,
			"event_type", ev.EventType, "step_id", ev.StepID, "logical_attempt_id", ev.LogicalAttemptID)
		switch ev.EventType {
		case events.RunCompleted, events.RunFailed, events.RunCancelled:
			select {
			case done <- ev.EventType:
			default:
			}
		default:
		}
	}
}
