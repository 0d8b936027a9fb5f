package streams

import (
	"fmt"
	"strings"
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

// DefaultLaneInactiveThreshold is how long a tenant lane's consumer lives
// with no worker pulling from it before the server deletes it. Workers
// pull from every lane that holds tasks, so only the lane of a tenant that
// has stopped sending tasks goes; a worker creates it again when the
// tenant's next task arrives.
const DefaultLaneInactiveThreshold = time.Hour

// LaneSeparator separates the queue from the lane token in a lane
// consumer's name, "tasks-<queue>~<token>". A queue whose workers use
// lanes must not contain it, so no lane's name is another queue's.
const LaneSeparator = "~"

// TaskLaneConsumerPrefix returns "tasks-<queue>~", the prefix of the name
// of every lane consumer of queue.
func TaskLaneConsumerPrefix(queue string) string { return "tasks-" + queue + LaneSeparator }

// TaskLaneConsumer returns the durable pull consumer of one tenant lane of
// a task queue, shared by every worker of the queue: "tasks-<queue>~<token>"
// on the queue's lanes stream (TaskLanesStream), filtered to weft.tasks.<queue>.<token>, with the AckWait
// and MaxDeliver of TaskConsumer and an InactiveThreshold after which the
// server deletes a lane nobody pulls from. ackWait zero means
// DefaultTaskAckWait, inactive zero DefaultLaneInactiveThreshold. It fails
// when queue is not a valid token or contains LaneSeparator, or token is
// not a lane token (ValidLaneToken).
func TaskLaneConsumer(queue, token string, ackWait, inactive time.Duration) (jetstream.ConsumerConfig, error) {
	cc, err := TaskConsumer(queue, ackWait)
	if err != nil {
		return jetstream.ConsumerConfig{}, err
	}
	if strings.Contains(queue, LaneSeparator) {
		return jetstream.ConsumerConfig{}, fmt.Errorf("%w: queue %q contains the lane separator %q", ErrInvalidToken, queue, LaneSeparator)
	}
	if err := ValidLaneToken(token); err != nil {
		return jetstream.ConsumerConfig{}, err
	}
	if inactive == 0 {
		inactive = DefaultLaneInactiveThreshold
	}
	if inactive < time.Second {
		return jetstream.ConsumerConfig{}, fmt.Errorf("%w: lane InactiveThreshold %v is under a second", ErrInvalidConfig, inactive)
	}
	cc.Durable = TaskLaneConsumerPrefix(queue) + token
	cc.Description = "Weft workers of task queue " + queue + ", tenant lane " + token
	cc.FilterSubject += "." + token
	cc.InactiveThreshold = inactive
	return cc, nil
}
