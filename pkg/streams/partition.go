package streams

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// Runs are divided into partitions so that several engines divide the work
// instead of racing on it (docs/scaling.md, "Partitioned engines").
// WEFT_EVENTS and WEFT_RESULTS capture weft.events.<class>.<runId> and
// weft.results.<runId>, as publishers send them, and store each message as
// weft.events.<p>.<class>.<runId> and weft.results.<p>.<runId>: the
// stream's subject transform computes p with the server's partition
// function, FNV-1a of the run id modulo P, the same function PartitionOf
// applies. Publishers know nothing of partitions; consumers filter on one
// partition (PartitionFilter, EventInputsFilter) or on every one
// (AllPartitionsFilter). The run id is the last token of every stored
// subject, whatever its form.
//
// P is fixed when a stream is created (Config.Partitions, `weft migrate
// --partitions`): Ensure keeps the P of a stream that exists, and refuses
// to change it, since a run would then be split over two partitions.
const (
	// DefaultPartitions is P when a stream is created with no
	// Config.Partitions: room for up to 8 engines. Each partition is a
	// durable consumer per stream, which costs the bus on every message,
	// so more partitions than engines will ever share them is waste.
	DefaultPartitions = 8
	// MaxPartitions bounds Config.Partitions. Each partition is a durable
	// consumer per stream that every engine may pull from.
	MaxPartitions = 256
)

// ErrPartitionsFixed is returned by Ensure when Config.Partitions asks for
// a P other than the one an existing stream was created with.
var ErrPartitionsFixed = errors.New("streams: the partition count is fixed when the stream is created")

// PartitionOf returns the partition of runID among n partitions: what the
// server's partition transform computes for the run's events and results.
// n must be at least 1.
func PartitionOf(runID string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(runID))
	return int(h.Sum32() % uint32(n))
}

// PartitionFilter returns prefix.<p>.*: the subjects of partition p of
// WEFT_RESULTS (prefix ResultsSubjectPrefix), and the events of partition
// p that WEFT_EVENTS stored before event classes (EventSubject).
func PartitionFilter(prefix string, p int) string {
	return prefix + "." + strconv.Itoa(p) + ".*"
}

// EventInputsFilter returns weft.events.<p>.in.*: the events of partition
// p that the engine reacts to (EngineInput), one filter subject, so the
// server skips the rest for the engine's consumer.
func EventInputsFilter(p int) string {
	return EventsSubjectPrefix + "." + strconv.Itoa(p) + "." + EventClassInput + ".*"
}

// AllPartitionsFilter returns the subjects of every partition of the
// stream whose publishers use prefix, and the subjects stored before the
// stream was partitioned (prefix.<runId>): prefix.>.
func AllPartitionsFilter(prefix string) string { return prefix + ".>" }

// UnpartitionedFilter returns prefix.*, the subjects a stream stored before
// it was partitioned. A consumer of partition 0 takes them too, so the
// messages in flight when a stream is first partitioned are not stranded.
func UnpartitionedFilter(prefix string) string { return prefix + ".*" }

// partitionTransform is the subject transform of stream into n
// partitions: WEFT_EVENTS's of weft.events.<class>.<runId>, partitioning
// on the run id, the second wildcard; WEFT_RESULTS's of
// weft.results.<runId>.
func partitionTransform(stream string, n int) *jetstream.SubjectTransformConfig {
	if stream == EventsStream {
		return &jetstream.SubjectTransformConfig{
			Source:      EventsSubjectPrefix + ".*.*",
			Destination: fmt.Sprintf("%s.{{partition(%d,2)}}.{{wildcard(1)}}.{{wildcard(2)}}", EventsSubjectPrefix, n),
		}
	}
	return &jetstream.SubjectTransformConfig{
		Source:      ResultsSubjectPrefix + ".*",
		Destination: fmt.Sprintf("%s.{{partition(%d,1)}}.{{wildcard(1)}}", ResultsSubjectPrefix, n),
	}
}

var partitionDest = regexp.MustCompile(`\{\{\s*partition\(\s*(\d+)\s*,\s*\d+\s*\)\s*\}\}`)

// partitionsOf returns the P of a stream config's partition transform, or
// 0 when it has none.
func partitionsOf(sc jetstream.StreamConfig) int {
	if sc.SubjectTransform == nil {
		return 0
	}
	m := partitionDest.FindStringSubmatch(sc.SubjectTransform.Destination)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return n
}

// Partitions returns the partition count of stream (WEFT_EVENTS or
// WEFT_RESULTS), read from its subject transform, so every engine uses the
// P the stream was created with. It fails when the stream is missing or is
// not partitioned (created before partitions, and not yet ensured since).
func Partitions(ctx context.Context, js jetstream.JetStream, stream string) (int, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("streams: partitions of %s: %w", stream, err)
	}
	n := partitionsOf(s.CachedInfo().Config)
	if n == 0 {
		return 0, fmt.Errorf("streams: %s is not partitioned (run weft migrate)", stream)
	}
	return n, nil
}

// Holds reports whether stream holds any message on filter: for an
// upgraded stream, the messages it stored in an older form
// (UnpartitionedFilter, and for WEFT_EVENTS PartitionFilter, the form
// before classes) until they age out (MaxAge). Only then need a consumer
// take them too: a consumer with more than one filter cost the server more
// for each message the more subjects (one per run) the stream held. It
// asks for the stream's info (the engine may read no message of the
// stream), whose answer lists each such subject: a cost paid by an
// upgraded stream only.
func Holds(ctx context.Context, js jetstream.JetStream, stream, filter string) (bool, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return false, fmt.Errorf("streams: messages of %s: %w", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return false, fmt.Errorf("streams: messages of %s on %s: %w", stream, filter, err)
	}
	return len(info.State.Subjects) > 0, nil
}

// partitioned returns the partition count Ensure gives a partitioned
// stream: the existing stream's when it has one (an error when cfg asks
// for another), else cfg's, else DefaultPartitions.
func partitioned(ctx context.Context, js jetstream.JetStream, name string, want int) (int, error) {
	s, err := js.Stream(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if want == 0 {
			return DefaultPartitions, nil
		}
		return want, nil
	case err != nil:
		return 0, fmt.Errorf("streams: ensure %s: %w", name, err)
	}
	have := partitionsOf(s.CachedInfo().Config)
	switch {
	case have == 0 && want == 0:
		return DefaultPartitions, nil
	case have == 0:
		return want, nil
	case want != 0 && want != have:
		return 0, fmt.Errorf("%w: %s has %d partitions, not %d (docs/scaling.md, \"Partitioned engines\")",
			ErrPartitionsFixed, name, have, want)
	}
	return have, nil
}

// RunEventsFilter returns weft.events.*.*.<runID>: the subjects WEFT_EVENTS
// stores the run's events on, whatever their partition and class, for a
// consumer of one run's events (an ordered consumer watching a run). It
// fails as EventSubject does.
func RunEventsFilter(runID string) (string, error) {
	return subject(EventsSubjectPrefix+".*.*", "run id", runID)
}

// RunResultsFilter returns weft.results.*.<runID>: the subject
// WEFT_RESULTS stores the run's results on, as RunEventsFilter.
func RunResultsFilter(runID string) (string, error) {
	return subject(ResultsSubjectPrefix+".*", "run id", runID)
}
