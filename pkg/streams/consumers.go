package streams

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultTaskAckWait is how long a worker may hold a task without a sign of
// life before JetStream redelivers it to another worker (with the delivery
// count, the attempt's engineAttemptId, one higher). Workers running an
// activity longer than this extend it with a heartbeat (Msg.InProgress)
// every third of it.
const DefaultTaskAckWait = 30 * time.Second

// DefaultTaskMaxDeliver bounds the deliveries of one task. A task whose
// workers keep dying is then left to the engine's sweep, which fails the
// attempt instead of handing it out forever.
const DefaultTaskMaxDeliver = 10

// TaskConsumer returns the durable pull consumer of one task queue, shared
// by every worker of the queue: "tasks-<queue>" on WEFT_TASKS, filtered to
// weft.tasks.<queue>, explicit acks. ackWait zero means DefaultTaskAckWait.
// It fails when queue is not a valid subject token.
func TaskConsumer(queue string, ackWait time.Duration) (jetstream.ConsumerConfig, error) {
	subject, err := TaskSubject(queue)
	if err != nil {
		return jetstream.ConsumerConfig{}, err
	}
	if ackWait == 0 {
		ackWait = DefaultTaskAckWait
	}
	if ackWait < time.Second {
		return jetstream.ConsumerConfig{}, fmt.Errorf("%w: task AckWait %v is under a second", ErrInvalidConfig, ackWait)
	}
	return jetstream.ConsumerConfig{
		Durable:       "tasks-" + queue,
		Description:   "Weft workers of task queue " + queue,
		FilterSubject: subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    DefaultTaskMaxDeliver,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}, nil
}
