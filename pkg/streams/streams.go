// Package streams is the one place Weft's JetStream streams (and later their
// consumers) are defined, and the subject builders that go with them.
//
// Every Weft stream is a transport, never a second source of truth
// (DESIGN.md, "The bus is a transport"): limits retention, file storage,
// DiscardNew so a full stream refuses new messages loudly instead of
// silently dropping old ones, delete and purge denied, and an explicit
// duplicate window that the outbox relay's retries must fit in.
//
// Subjects:
//
//	weft.events.<class>.<runId>  WEFT_EVENTS  run events, relayed from the outbox,
//	                             stored as weft.events.<p>.<class>.<runId> (partition.go)
//	weft.tasks.<queue>[.<lane>]  WEFT_TASKS  activity tasks (work queue)
//	weft.results.<runId>   WEFT_RESULTS  worker results, stored as weft.results.<p>.<runId>
//	weft.cancel.<runId>    WEFT_CANCELS  cancel notices to workers, relayed from the outbox
//	weft.signals.<runId>   (core NATS)   the gateway's signal ingress
//	weft.triggers.<id>     (core NATS)   the gateway's trigger event ingress
//	weft.engine.reconcile  (core NATS)   reconciliation lookups, request-reply
package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stream names.
const (
	// EventsStream captures weft.events.*: every event of every run.
	EventsStream = "WEFT_EVENTS"
	// TasksStream captures weft.tasks.*: the tasks of every queue. It is a
	// work queue: a task leaves the stream when a worker acks it.
	TasksStream = "WEFT_TASKS"
	// ResultsStream captures weft.results.*: what workers report.
	ResultsStream = "WEFT_RESULTS"
)

// Defaults applied to a zero Config field.
const (
	// DefaultMaxAge bounds how long the bus keeps a message. Postgres keeps
	// the event log; a consumer that falls further behind resyncs from it.
	DefaultMaxAge = 24 * time.Hour
	// DefaultMaxBytes bounds each stream's size. With DiscardNew a full
	// stream refuses publishes (the outbox relay holds the rows and logs),
	// it never drops old messages a consumer has not read.
	DefaultMaxBytes int64 = 4 << 30
	// DefaultDuplicates is the JetStream dedupe window (Nats-Msg-Id). It
	// must exceed the outbox relay's worst retry span, about 91s with the
	// default outbox.RelayConfig (outbox.RelayConfig.RetrySpan has the
	// arithmetic): 5 minutes leaves a threefold margin. The server
	// keeps every message id of the window in memory: at 2,000 messages/s
	// that is 600,000 ids, tens of megabytes.
	DefaultDuplicates = 5 * time.Minute
	// DefaultReplicas is 1, right for one server (weft dev). A JetStream
	// cluster runs R3.
	DefaultReplicas = 1
	// DefaultLanesMaxBytes bounds each task queue's lanes stream
	// (TaskLanes). There is one per queue, and JetStream reserves each
	// stream's MaxBytes up front, so it is smaller than the others'.
	DefaultLanesMaxBytes int64 = 1 << 30
)

// Config sets the limits shared by Weft's streams. The zero value of each
// field means its default.
type Config struct {
	// MaxAge is how long a message is kept. Default DefaultMaxAge.
	MaxAge time.Duration
	// MaxBytes caps each stream's size. Default DefaultMaxBytes.
	MaxBytes int64
	// Duplicates is the dedupe window. Default DefaultDuplicates. It must
	// not exceed MaxAge and must be at least the outbox relay's RetrySpan.
	Duplicates time.Duration
	// Replicas is the number of copies in a cluster, 1 to 5. Default 1.
	Replicas int
	// CancelsMaxBytes caps WEFT_CANCELS, which discards its oldest notices
	// when full (Cancels). Default DefaultCancelsMaxBytes.
	CancelsMaxBytes int64
	// LanesMaxBytes caps each task queue's lanes stream (TaskLanes).
	// Default DefaultLanesMaxBytes.
	LanesMaxBytes int64
	// Partitions is P, the number of partitions WEFT_EVENTS and
	// WEFT_RESULTS divide runs into (partition.go), 1 to MaxPartitions.
	// Zero means the P of the existing stream, or DefaultPartitions for a
	// new one. It is fixed when the stream is created.
	Partitions int
}

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("streams: invalid config")

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.MaxAge = cmp.Or(c.MaxAge, DefaultMaxAge)
	c.MaxBytes = cmp.Or(c.MaxBytes, DefaultMaxBytes)
	c.Duplicates = cmp.Or(c.Duplicates, DefaultDuplicates)
	c.Replicas = cmp.Or(c.Replicas, DefaultReplicas)
	c.CancelsMaxBytes = cmp.Or(c.CancelsMaxBytes, DefaultCancelsMaxBytes)
	c.LanesMaxBytes = cmp.Or(c.LanesMaxBytes, DefaultLanesMaxBytes)
	return c
}

// Validate reports whether c, after defaults, is a config JetStream
// accepts and Weft can rely on.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.MaxAge < 0:
		return fmt.Errorf("%w: MaxAge %v is negative", ErrInvalidConfig, c.MaxAge)
	case c.MaxBytes < 0:
		return fmt.Errorf("%w: MaxBytes %d is negative", ErrInvalidConfig, c.MaxBytes)
	case c.CancelsMaxBytes < 0:
		return fmt.Errorf("%w: CancelsMaxBytes %d is negative", ErrInvalidConfig, c.CancelsMaxBytes)
	case c.LanesMaxBytes < 0:
		return fmt.Errorf("%w: LanesMaxBytes %d is negative", ErrInvalidConfig, c.LanesMaxBytes)
	case c.Duplicates < 0:
		return fmt.Errorf("%w: Duplicates %v is negative", ErrInvalidConfig, c.Duplicates)
	case c.Duplicates > c.MaxAge:
		return fmt.Errorf("%w: Duplicates %v exceeds MaxAge %v", ErrInvalidConfig, c.Duplicates, c.MaxAge)
	case validReplicas(c.Replicas) != nil:
		return validReplicas(c.Replicas)
	case c.Partitions < 0 || c.Partitions > MaxPartitions:
		return fmt.Errorf("%w: Partitions %d is not between 1 and %d", ErrInvalidConfig, c.Partitions, MaxPartitions)
	}
	return nil
}

// validReplicas refuses a replica count JetStream does not take: 1 to 5.
func validReplicas(n int) error {
	if n < 1 || n > 5 {
		return fmt.Errorf("%w: Replicas %d is not between 1 and 5", ErrInvalidConfig, n)
	}
	return nil
}

// Events returns the definition of WEFT_EVENTS, which captures
// weft.events.<class>.<runId> (two subjects per run, EventSubject) and
// stores it as weft.events.<p>.<class>.<runId>, p the run's partition
// (partition.go). It captures weft.events.<runId> too, the subject of an
// older build, so that the outbox rows it left are relayed after an
// upgrade: they are stored as they are, where partition 0's engine finds
// them (UnpartitionedFilter). Zero fields of cfg take their defaults;
// Ensure validates cfg before using it.
func Events(cfg Config) jetstream.StreamConfig {
	sc := partitionedBase(EventsStream, "Weft run events, relayed from the Postgres outbox", EventsSubjectPrefix, cfg)
	sc.Subjects = []string{EventsSubjectPrefix + ".*.*", UnpartitionedFilter(EventsSubjectPrefix)}
	return sc
}

// Tasks returns the definition of WEFT_TASKS. Work-queue retention: each
// task is held until one worker acks it. It captures weft.tasks.*: a
// queue's tasks of no tenant (an engine's before tenant lanes), read
// through the queue's durable consumer (TaskConsumer). A tenant's tasks
// are on its lane, in the queue's own lanes stream (TaskLanes).
//
// Unlike WEFT_EVENTS it allows deleting a message: an operator may remove a
// poison task, and the engine's sweep sends again any task that goes
// missing (docs/engine.md, "Sweeps").
func Tasks(cfg Config) jetstream.StreamConfig {
	sc := base(TasksStream, "Weft activity tasks of no tenant, one subject per queue", TasksSubjectPrefix+".*", cfg)
	sc.Retention = jetstream.WorkQueuePolicy
	sc.DenyDelete = false
	return sc
}

// TaskLanesStream returns the name of queue's lanes stream,
// "WEFT_TASKS_<LaneToken(queue)>". A stream name is one token of the
// JetStream API's subjects, so NATS permissions can give a queue's
// workers its lanes' consumers, and no other queue's.
func TaskLanesStream(queue string) string { return TasksStream + "_" + LaneToken(queue) }

// TaskLanes returns the definition of queue's lanes stream
// (TaskLanesStream), at most cfg.LanesMaxBytes: work-queue retention, like
// WEFT_TASKS, capturing
// weft.tasks.<queue>.*, one subject per tenant lane, each read through
// the lane's durable consumer (TaskLaneConsumer). The engine creates it
// (EnsureTaskLanes) before it dispatches the queue's first task of a
// tenant. It fails when queue is not a valid subject token.
func TaskLanes(cfg Config, queue string) (jetstream.StreamConfig, error) {
	filter, err := TaskLanesFilter(queue)
	if err != nil {
		return jetstream.StreamConfig{}, err
	}
	sc := base(TaskLanesStream(queue), "Weft activity tasks of queue "+queue+", one subject per tenant lane", filter, cfg)
	sc.MaxBytes = cfg.WithDefaults().LanesMaxBytes
	sc.Retention = jetstream.WorkQueuePolicy
	sc.DenyDelete = false
	return sc, nil
}

// EnsureTaskLanes creates queue's lanes stream, or updates one of another
// definition to the current one; idempotent, like Ensure. A stream that
// already has the definition is left alone: no update, which would race
// the consumers its workers create meanwhile. It creates first and looks
// up only when the stream exists (createFirst), because the engine, which
// calls it, may not read the info of a queue's stream (deploy/nats.conf):
// the server checks the create's MaxBytes against max_file_store before
// it sees the stream exists, so the server must have room for one more
// lanes stream (docs/deploy.md, "JetStream storage").
func EnsureTaskLanes(ctx context.Context, js jetstream.JetStream, cfg Config, queue string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	sc, err := TaskLanes(cfg, queue)
	if err != nil {
		return err
	}
	if err := createFirst(ctx, js, sc); err != nil {
		return fmt.Errorf("streams: ensure %s: %w", sc.Name, err)
	}
	return nil
}

// ensure looks the stream sc defines up, creates it when it is missing and
// updates it when its definition differs from sc (sameDefinition). A
// stream that already has the definition is left alone: no create, whose
// MaxBytes the server checks against the account's storage before it sees
// the stream exists (a full max_file_store refuses it, error 10047), and
// no update, which, even to the same config, races the consumers being
// created on the stream meanwhile (nats-server 2.15's file store rewrites
// its config under a consumer create: the race detector catches it in the
// tests).
func ensure(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) error {
	s, err := js.Stream(ctx, sc.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, sc)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return wrapEnsure(sc.Name, err)
		}
		s, err = js.Stream(ctx, sc.Name) // another process created it meanwhile
	}
	if err != nil {
		return wrapEnsure(sc.Name, err)
	}
	if sameDefinition(s.CachedInfo().Config, sc) {
		return nil
	}
	_, err = js.UpdateStream(ctx, sc)
	return wrapEnsure(sc.Name, err)
}

// createFirst creates the stream sc defines, or updates one of another
// definition to sc: JetStream's create succeeds on a stream that has the
// definition already (when the account's storage has room for sc's
// MaxBytes once more).
func createFirst(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) error {
	_, err := js.CreateStream(ctx, sc)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		_, err = js.UpdateStream(ctx, sc)
	}
	return err
}

// wrapEnsure names the stream in err; nil stays nil.
func wrapEnsure(name string, err error) error {
	if err != nil {
		return fmt.Errorf("streams: ensure %s: %w", name, err)
	}
	return nil
}

// Results returns the definition of WEFT_RESULTS, which captures
// weft.results.<runId> (one subject per run) and stores it as
// weft.results.<p>.<runId>.
func Results(cfg Config) jetstream.StreamConfig {
	return partitionedBase(ResultsStream, "Weft worker results, one subject per run", ResultsSubjectPrefix, cfg)
}

// partitionedBase is base for stream name capturing prefix.<runId> into
// cfg.Partitions partitions (DefaultPartitions when zero);
// partitionTransform says how.
func partitionedBase(name, description, prefix string, cfg Config) jetstream.StreamConfig {
	sc := base(name, description, prefix+".*", cfg)
	sc.SubjectTransform = partitionTransform(name, cmp.Or(cfg.Partitions, DefaultPartitions))
	return sc
}

// base is the shape every Weft stream shares.
func base(name, description, subject string, cfg Config) jetstream.StreamConfig {
	cfg = cfg.WithDefaults()
	return jetstream.StreamConfig{
		Name:        name,
		Description: description,
		Subjects:    []string{subject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardNew,
		MaxAge:      cfg.MaxAge,
		MaxBytes:    cfg.MaxBytes,
		MaxMsgs:     -1,
		Duplicates:  cfg.Duplicates,
		Replicas:    cfg.Replicas,
		DenyDelete:  true,
		DenyPurge:   true,
	}
}

// All returns the definitions of every Weft stream, in creation order.
func All(cfg Config) []jetstream.StreamConfig {
	return []jetstream.StreamConfig{Events(cfg), Tasks(cfg), Results(cfg), Cancels(cfg)}
}

// Ensure creates every missing Weft stream, or updates one to the current
// definition when it differs (ensure looks each up first). It is
// idempotent and safe to run from several processes at
// once. A change JetStream cannot apply in place (storage type, for one)
// fails with the server's error. A partitioned stream keeps the partition
// count it was created with; a stream created before partitions is
// partitioned now. A cfg.Partitions other than an existing stream's fails
// with ErrPartitionsFixed.
func Ensure(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, sc := range All(cfg) {
		if sc.SubjectTransform != nil {
			n, err := partitioned(ctx, js, sc.Name, cfg.Partitions)
			if err != nil {
				return err
			}
			sc.SubjectTransform = partitionTransform(sc.Name, n)
		}
		if err := ensure(ctx, js, sc); err != nil {
			return err
		}
	}
	return nil
}
