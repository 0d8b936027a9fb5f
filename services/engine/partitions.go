package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/bus/shards"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/engine/internal/partition"
)

// Partitioned consumption (docs/scaling.md, "Partitioned engines"):
// WEFT_EVENTS and WEFT_RESULTS store a run's messages on its partition
// (streams.PartitionOf), and each partition has a durable consumer per
// stream, engine-events-<p> and engine-results-<p>. The running engines
// divide the partitions among them (internal/partition) and each consumes
// only its own, so one engine drives a run's rounds. The consumers'
// pinned_client priority policy delivers a partition to one engine at a
// time, also while two engines disagree on the division; the run head's
// compare-and-swap stays the safety net.
const (
	// PriorityGroup is the priority group of the partition consumers.
	PriorityGroup = "engines"
	// DefaultPartitionLease is how long an engine stays a member without
	// a heartbeat, and its consumers' PinnedTTL: a killed engine's
	// partitions resume on the others about this long after its last
	// heartbeat.
	DefaultPartitionLease = 5 * time.Second
	// MinPartitionLease bounds Config.PartitionLease below: heartbeats
	// come every fifth of it.
	MinPartitionLease = 2 * time.Second
)

// PartitionConsumer returns the name of partition p's consumer on
// stream: engine-events-<p> or engine-results-<p>.
func PartitionConsumer(stream string, p int) string {
	base := EventsConsumer
	if stream == streams.ResultsStream {
		base = ResultsConsumer
	}
	return base + "-" + strconv.Itoa(p)
}

// feedSpec is one of the streams the engine consumes by partition.
type feedSpec struct {
	stream, prefix string
	// filter is the subjects of partition p the engine consumes.
	filter func(p int) string
	shards *shards.Shards
}

// partitionResults is the engine's filter of WEFT_RESULTS: all of them.
func partitionResults(p int) string { return streams.PartitionFilter(streams.ResultsSubjectPrefix, p) }

// partitionConsumers are the engine's shards, one set per stream, and the
// partitions it consumes into them.
type partitionConsumers struct {
	s       *Service
	feeds   []feedSpec
	manager *partition.Manager
	done    chan struct{}
	keepers sync.Map // consumer name → *streams.Keeper, of the partitions held
}

// startConsumers starts the shards and the partition manager, which adds
// and removes the partitions' consumers until ctx ends.
func (s *Service) startConsumers(ctx context.Context) (*partitionConsumers, error) {
	pc := &partitionConsumers{s: s, done: make(chan struct{})}
	for _, f := range []struct {
		feedSpec
		toRound toRoundFunc
	}{
		// Of WEFT_EVENTS, the events the engine reacts to alone
		// (streams.EngineInput), not the rest of the log.
		{feedSpec{stream: streams.EventsStream, prefix: streams.EventsSubjectPrefix, filter: streams.EventInputsFilter}, eventRound},
		{feedSpec{stream: streams.ResultsStream, prefix: streams.ResultsSubjectPrefix, filter: partitionResults}, s.resultRound},
	} {
		l := shards.NewShared(s.cfg.Concurrency, s.cfg.MaxBatch, func(msgs []jetstream.Msg) {
			s.handleBatch(ctx, msgs, f.toRound)
		}, shards.Linger(s.cfg.RoundLinger))
		// The shards outlive ctx by their drain (the engine's run loop
		// stops them once ctx ends): ending Start's context would be a
		// hard stop.
		if err := l.Start(context.WithoutCancel(ctx)); err != nil {
			pc.stopLanes(ctx)
			return nil, fmt.Errorf("engine: %s shards: %w", f.stream, err)
		}
		f.shards = l
		pc.feeds = append(pc.feeds, f.feedSpec)
	}
	pc.manager = &partition.Manager{
		Members: partition.NewMembers(s.pool, s.cfg.EngineID, s.cfg.PartitionLease),
		Count: func(ctx context.Context) (int, error) {
			return streams.Partitions(ctx, s.js, streams.EventsStream)
		},
		Refresh: s.cfg.PartitionLease / 5,
		Lease:   s.cfg.PartitionLease,
		Acquire: pc.acquire,
		Release: pc.release,
		Changed: s.partitionsHeld,
		Logger:  s.logger,
	}
	go func() {
		defer close(pc.done)
		pc.manager.Run(ctx)
	}()
	return pc, nil
}

// awaitFirstShare waits until the engine consumes its first share of the
// partitions, for at most d or until ctx ends: a started engine consumes
// at once, and one whose bus or database is not answering yet still
// starts (its share follows when they answer).
func (pc *partitionConsumers) awaitFirstShare(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-pc.manager.Ready():
	case <-t.C:
	case <-ctx.Done():
	}
}

// stop waits for the manager to release every partition (it does once
// the engine's ctx ended), then stops the shards, dropping what they hold
// once hard ends.
func (pc *partitionConsumers) stop(hard context.Context) {
	<-pc.done
	pc.stopLanes(hard)
}

func (pc *partitionConsumers) stopLanes(ctx context.Context) {
	for _, f := range pc.feeds {
		_ = f.shards.Stop(ctx) // drains until ctx ends; cut short, the messages come back
	}
}

// acquire consumes partition p of every stream.
func (pc *partitionConsumers) acquire(ctx context.Context, p int) error {
	for i, f := range pc.feeds {
		if err := pc.add(ctx, f, p); err != nil {
			for _, added := range pc.feeds[:i] {
				pc.remove(ctx, added, p)
			}
			return err
		}
	}
	return nil
}

func (pc *partitionConsumers) add(ctx context.Context, f feedSpec, p int) error {
	s := pc.s
	cc := jetstream.ConsumerConfig{
		Durable:        PartitionConsumer(f.stream, p),
		FilterSubjects: []string{f.filter(p)},
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        s.cfg.AckWait,
		MaxAckPending:  s.cfg.Concurrency * 32,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{PriorityGroup},
		PinnedTTL:      s.cfg.PartitionLease,
	}
	old, err := pc.olderForms(ctx, f, p)
	if err != nil {
		return fmt.Errorf("engine: consumer %s: %w", cc.Durable, err)
	}
	cc.FilterSubjects = append(cc.FilterSubjects, old...)
	keeper, err := streams.NewKeeper(s.js, f.stream, cc, streams.KeeperConfig{Logger: s.logger, MeterProvider: s.cfg.MeterProvider})
	if err != nil {
		return fmt.Errorf("engine: consumer %s: %w", cc.Durable, err)
	}
	err = f.shards.Add(ctx, keeper, jetstream.PullPriorityGroup(PriorityGroup))
	if err != nil {
		_ = keeper.Close()
		return fmt.Errorf("engine: consumer %s: %w", cc.Durable, err)
	}
	pc.keepers.Store(cc.Durable, keeper)
	return nil
}

// olderForms returns the filters of the messages of partition p that f's
// stream stored in the forms of older builds, while it holds any: before
// partitions (partition 0 takes them) and, where the feed's filter is not
// the partition's whole (WEFT_EVENTS's), before event classes. The engine
// reads each event's type from its header, so an old event it does not
// react to costs an ack.
func (pc *partitionConsumers) olderForms(ctx context.Context, f feedSpec, p int) ([]string, error) {
	var candidates []string
	if p == 0 {
		candidates = append(candidates, streams.UnpartitionedFilter(f.prefix))
	}
	if before := streams.PartitionFilter(f.prefix, p); before != f.filter(p) {
		candidates = append(candidates, before) // WEFT_EVENTS's, before event classes
	}
	var held []string
	for _, filter := range candidates {
		ok, err := streams.Holds(ctx, pc.s.js, f.stream, filter)
		if err != nil {
			return nil, err
		}
		if ok {
			held = append(held, filter)
		}
	}
	return held, nil
}

// release stops consuming partition p of every stream, once the shards
// handled what it delivered, and unpins its consumers, so the engine that
// takes p need not wait out the pin.
func (pc *partitionConsumers) release(ctx context.Context, p int) {
	for _, f := range pc.feeds {
		pc.remove(ctx, f, p)
	}
}

func (pc *partitionConsumers) remove(ctx context.Context, f feedSpec, p int) {
	s := pc.s
	name := PartitionConsumer(f.stream, p)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AckWait)
	defer cancel()
	if err := f.shards.Remove(ctx, name); err != nil {
		s.logger.WarnContext(ctx, "engine: releasing a partition cut short", "consumer", name, "err", err)
	}
	if k, ok := pc.keepers.LoadAndDelete(name); ok {
		_ = k.(*streams.Keeper).Close()
	}
	stream, err := s.js.Stream(ctx, f.stream)
	if err == nil {
		err = stream.UnpinConsumer(ctx, name, PriorityGroup)
	}
	if err != nil {
		s.logger.DebugContext(ctx, "engine: unpinning a released partition failed; its pin lapses", "consumer", name, "err", err)
	}
}

// newEngineID returns an id for an engine process: its host, its pid and
// random bits, so a restarted engine is a new member.
func newEngineID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// partitionsHeld records the partitions the engine holds, for the
// weft.engine.partitions.held gauge.
func (s *Service) partitionsHeld(held []int) { s.held.Store(int64(len(held))) }

// registerPartitionGauge registers weft.engine.partitions.held, the
// partitions this engine consumes; the registration ends with the engine.
func (s *Service) registerPartitionGauge() (metric.Registration, error) {
	if s.cfg.MeterProvider == nil {
		return nil, nil
	}
	meter := s.cfg.MeterProvider.Meter(meterName)
	g, err := meter.Int64ObservableGauge("weft.engine.partitions.held", metric.WithUnit("{partition}"),
		metric.WithDescription("Partitions of the runs this engine consumes."))
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(g, s.held.Load())
		return nil
	}, g)
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	return reg, nil
}
