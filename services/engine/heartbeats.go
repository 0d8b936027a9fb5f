package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
)

// Defaults of the heartbeat bucket (Config.HeartbeatMaxAge and
// Config.HeartbeatBucketBytes).
const (
	DefaultHeartbeatMaxAge      = 24 * time.Hour
	DefaultHeartbeatBucketBytes = 256 << 20
)

// ensureHeartbeats creates or updates the bucket workers put heartbeats
// in (task.HeartbeatsBucket; docs/worker-protocol.md, "Heartbeats"): one
// revision per step, each value at most the details limit plus the
// record's overhead, entries dropped after HeartbeatMaxAge, the whole
// bounded by HeartbeatBucketBytes, with as many replicas as the streams
// (Config.Streams.Replicas). A request the bus cannot serve yet
// (streams.NotReady: a cluster without a leader or a quorum for a moment,
// or whose servers are still joining) is made again every RetryDelay
// until ctx ends; any other refusal fails at once. Heartbeats are kept out of the event
// log (task.Heartbeat says why).
func (s *Service) ensureHeartbeats(ctx context.Context) error {
	cfg := jetstream.KeyValueConfig{
		Bucket:       task.HeartbeatsBucket,
		Description:  "Weft: the last heartbeat of each activity step, by run and step",
		MaxValueSize: task.DefaultMaxHeartbeatDetailsBytes + task.HeartbeatRecordOverheadBytes,
		History:      1,
		TTL:          s.cfg.HeartbeatMaxAge,
		MaxBytes:     s.cfg.HeartbeatBucketBytes,
		Storage:      jetstream.FileStorage,
		Replicas:     s.cfg.Streams.WithDefaults().Replicas,
	}
	for logged := false; ; logged = true {
		kv, err := s.js.CreateOrUpdateKeyValue(ctx, cfg)
		if err == nil {
			s.heartbeats = kv
			return nil
		}
		if !streams.NotReady(err) || ctx.Err() != nil {
			return fmt.Errorf("engine: heartbeat bucket %s: %w", task.HeartbeatsBucket, err)
		}
		if !logged { // a cluster electing a leader, or a server restarting
			s.logger.WarnContext(ctx, "engine: heartbeat bucket unanswered; trying again", "bucket", task.HeartbeatsBucket, "err", err)
		}
		if err := periodic.Sleep(ctx, s.cfg.RetryDelay); err != nil {
			return fmt.Errorf("engine: heartbeat bucket %s: %w", task.HeartbeatsBucket, err)
		}
	}
}

// lastHeartbeat returns when logical attempt attempt of step stepID of
// run runID last sent a heartbeat: the bucket's time of the step's entry,
// if that attempt wrote it; zero when it sent none. An error means the
// bucket could not be read, and nothing may be concluded.
func (s *Service) lastHeartbeat(ctx context.Context, runID, stepID string, attempt int) (time.Time, error) {
	e, err := s.heartbeats.Get(ctx, task.HeartbeatKey(runID, stepID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	var rec task.Heartbeat
	if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.LogicalAttemptID != strconv.Itoa(attempt) {
		return time.Time{}, nil //nolint:nilerr // an undecodable record is no heartbeat of this attempt
	}
	return e.Created().UTC(), nil
}
