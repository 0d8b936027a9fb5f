package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/journal"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
)

// demoRun appends the events of a small finished run to the log, one
// transaction per event as the engine would, and logs each event as JetStream
// delivers it, showing the path log → outbox → relay → stream in order. It
// stands in for the engine until issue #3 lands.
func demoRun(ctx context.Context, env *environment, pool *pgxpool.Pool, js jetstream.JetStream) error {
	runID := events.NewRunID()
	subject, err := streams.EventSubject(runID)
	if err != nil {
		return err
	}
	cons, err := js.OrderedConsumer(ctx, streams.EventsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
	})
	if err != nil {
		return fmt.Errorf("demo: consumer: %w", err)
	}
	plan, err := demoEvents(runID)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var ev events.Event
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			env.logger.ErrorContext(ctx, "demo: undecodable event", "err", err)
			return
		}
		env.logger.InfoContext(ctx, "relayed event", "run_id", ev.RunID, "run_seq", ev.RunSeq,
			"event_type", ev.EventType, "step_id", ev.StepID)
		if ev.RunSeq == int64(len(plan)) {
			close(done)
		}
	})
	if err != nil {
		return fmt.Errorf("demo: consume: %w", err)
	}
	defer cc.Stop()

	j := journal.New(eventlog.New(pool))
	for _, ev := range plan {
		if _, err := j.Append(ctx, pool, nil, ev); err != nil {
			return fmt.Errorf("demo: append %s: %w", ev.EventType, err)
		}
	}
	env.logger.InfoContext(ctx, "demo run appended", "run_id", runID, "events", len(plan))
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("demo: run %s was not relayed within 30s", runID)
	}
}

// demoEvents is a one-step run from approval to completion.
func demoEvents(runID string) ([]events.Event, error) {
	const planVersion = "1"
	specs := []events.Spec{
		{Type: events.RunApproved, Data: events.RunApprovedData{PlanID: "demo", PlanVersion: planVersion}},
		{Type: events.RunStarted},
		{Type: events.StepScheduled, StepID: "hello", Data: events.StepScheduledData{Activity: "echo", Queue: "default"}},
		{Type: events.StepStarted, StepID: "hello"},
		{Type: events.StepCompleted, StepID: "hello", Data: events.StepCompletedData{Output: json.RawMessage(`{"greeting":"hello"}`)}},
		{Type: events.RunCompleted},
	}
	evs := make([]events.Event, len(specs))
	for i, s := range specs {
		s.RunID, s.PlanVersion = runID, planVersion
		if s.StepID != "" {
			s.LogicalAttemptID = "1"
		}
		ev, err := events.New(s)
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		evs[i] = ev
	}
	return evs, nil
}
