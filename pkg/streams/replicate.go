package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// HeartbeatsStream is the stream behind the engine's heartbeat bucket
// (task.HeartbeatsBucket, "WEFT_HEARTBEATS"): JetStream keeps a key-value
// bucket B in the stream KV_B.
const HeartbeatsStream = "KV_WEFT_HEARTBEATS"

// IsTaskLanesStream reports whether name is the name of a task queue's
// lanes stream (TaskLanesStream): WEFT_TASKS_ followed by a lane token.
func IsTaskLanesStream(name string) bool {
	token, ok := strings.CutPrefix(name, TasksStream+"_")
	return ok && ValidLaneToken(token) == nil
}

// IsWeftStream reports whether name is one of Weft's streams: the ones
// Ensure makes (All), a task queue's lanes stream (IsTaskLanesStream),
// which the engine makes, or the heartbeat bucket's (HeartbeatsStream).
func IsWeftStream(name string) bool {
	switch name {
	case EventsStream, TasksStream, ResultsStream, CancelsStream, HeartbeatsStream:
		return true
	}
	return IsTaskLanesStream(name)
}

// ReplicaChange is one stream whose replica count Replicate changed.
type ReplicaChange struct {
	// Stream is the stream's name.
	Stream string
	// From and To are its replica counts before and after.
	From, To int
}

// String is "stream S: replicas F -> T".
func (c ReplicaChange) String() string {
	return fmt.Sprintf("stream %s: replicas %d -> %d", c.Stream, c.From, c.To)
}

// ReplicasError is returned by Replicate for a stream the server would not
// give the replica count asked: a single server, which holds one copy
// only, or a cluster with fewer servers than replicas.
type ReplicasError struct {
	// Stream is the stream's name.
	Stream string
	// Replicas is the count asked; Have the stream's count afterwards.
	Replicas, Have int
	// Err is the server's refusal, nil when it accepted the update but
	// kept Have replicas.
	Err error
}

func (e *ReplicasError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("streams: stream %s has %d replicas and cannot have %d: %v",
			e.Stream, e.Have, e.Replicas, e.Err)
	}
	return fmt.Sprintf("streams: stream %s has %d replicas and cannot have %d: the server accepted the update and kept %d",
		e.Stream, e.Have, e.Replicas, e.Have)
}

func (e *ReplicasError) Unwrap() error { return e.Err }

// Replicate gives every Weft stream on the server (IsWeftStream) replicas
// copies: it lists the account's stream names, reads each Weft stream's
// info and updates each of another replica count, changing its replica
// count and nothing else. Ensure makes the streams of All with the replicas of its Config; the
// lanes streams and the heartbeat bucket's, which the engine makes, are
// brought to it here. Fewer replicas than a stream has is a change too.
// Other streams are left alone.
//
// It returns the changes it made, in stream name order: none when every
// Weft stream already has replicas copies. It tries every stream, and
// returns with the changes a ReplicasError for each stream the server did
// not give replicas copies (errors.Join), or the error of the listing.
func Replicate(ctx context.Context, js jetstream.JetStream, replicas int) ([]ReplicaChange, error) {
	if err := validReplicas(replicas); err != nil {
		return nil, err
	}
	configs, err := weftStreams(ctx, js)
	if err != nil {
		return nil, err
	}
	var changes []ReplicaChange
	var errs []error
	for _, sc := range configs {
		if cmp.Or(sc.Replicas, 1) == replicas {
			continue
		}
		c, err := setReplicas(ctx, js, sc, replicas)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		changes = append(changes, c)
	}
	return changes, errors.Join(errs...)
}

// setReplicas updates the stream whose config is sc to replicas copies,
// the rest of sc as it is, and checks the server kept the count.
func setReplicas(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig, replicas int) (ReplicaChange, error) {
	have := cmp.Or(sc.Replicas, 1)
	sc.Replicas = replicas
	s, err := js.UpdateStream(ctx, sc)
	if err != nil {
		return ReplicaChange{}, &ReplicasError{Stream: sc.Name, Replicas: replicas, Have: have, Err: err}
	}
	if kept := cmp.Or(s.CachedInfo().Config.Replicas, 1); kept != replicas {
		return ReplicaChange{}, &ReplicasError{Stream: sc.Name, Replicas: replicas, Have: kept}
	}
	return ReplicaChange{Stream: sc.Name, From: have, To: replicas}, nil
}

// weftStreams returns the configs of the Weft streams on the server, in
// name order, each once. The names come from the account's stream names,
// which a cluster's meta leader answers from its whole record, and each
// config from the stream's own info: a cluster's listing of infos leaves
// out a stream whose leader is slow to answer.
func weftStreams(ctx context.Context, js jetstream.JetStream) ([]jetstream.StreamConfig, error) {
	lister := js.StreamNames(ctx)
	var names []string
	for name := range lister.Name() {
		names = append(names, name)
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("streams: list the streams: %w", err)
	}
	var configs []jetstream.StreamConfig
	for _, name := range weftNames(names) {
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("streams: stream %s: %w", name, err)
		}
		configs = append(configs, s.CachedInfo().Config)
	}
	return configs, nil
}

// weftNames returns the Weft streams of names, in name order, each once.
func weftNames(names []string) []string {
	var weft []string
	for _, name := range names {
		if IsWeftStream(name) {
			weft = append(weft, name)
		}
	}
	slices.Sort(weft)
	return slices.Compact(weft)
}
