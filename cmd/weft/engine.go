package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/worker"
	activityworker "github.com/weftrun/weft/services/activity-worker"
	"github.com/weftrun/weft/services/engine"
)

// engineOptions are the flags of `weft engine`.
type engineOptions struct {
	urls        backendURLs
	streams     *streamOptions
	ops         *string
	concurrency *int
	roundLinger *time.Duration
	checkpoints checkpointOptions
	sweep       *sweepOptions
	taskKeyFile *string
	admission   *admissionOptions
	maxRunDepth *int
	// replyPrefixes are the reply subjects the engine answers lookups on
	// (engine.Config.ReconcileReplyPrefixes), comma-separated.
	replyPrefixes *string
	eventForm     *streams.EventForm
}

// sweepOptions are the flags of the engine's sweep timings
// (docs/engine.md, "Sweeps" and "Recovery times") and its partition lease
// (docs/scaling.md, "Partitioned engines").
type sweepOptions struct {
	interval, stallAfter, taskGrace, partitionLease time.Duration
	// command is the flags' command ("weft engine", "weft dev"), for errors.
	command string
}

// sweepFlags defines the sweep flags on f, with the engine's defaults.
func sweepFlags(f *flags) *sweepOptions {
	o := &sweepOptions{command: f.Name()}
	f.durationVar(&o.interval, "sweep-interval", "WEFT_ENGINE_SWEEP_INTERVAL", engine.DefaultSweepInterval,
		fmt.Sprintf("how often each engine looks for stalled runs (%s to %s)", engine.MinSweepInterval, engine.MaxSweepInterval))
	f.durationVar(&o.stallAfter, "stall-after", "WEFT_ENGINE_STALL_AFTER", engine.DefaultStallAfter,
		fmt.Sprintf("how long a run's log must stand still before the sweep re-drives it, and between two sweeps of a run (%s to %s)",
			engine.MinStallAfter, engine.MaxStallAfter))
	f.durationVar(&o.taskGrace, "task-grace", "WEFT_ENGINE_TASK_GRACE", engine.DefaultTaskGrace,
		fmt.Sprintf("how long past its timeout a started attempt may stay silent before its task is sent again (%s to %s)",
			engine.MinTaskGrace, engine.MaxTaskGrace))
	f.durationVar(&o.partitionLease, "partition-lease", "WEFT_ENGINE_PARTITION_LEASE", engine.DefaultPartitionLease,
		fmt.Sprintf("how long an engine keeps its partitions of the runs without a heartbeat: about how long a killed engine's runs wait for another (%s to %s)",
			engine.MinPartitionLease, engine.MaxPartitionLease))
	return o
}

// apply sets the sweep timings on cfg and returns it, or the flag a timing
// out of its limits came from.
func (o sweepOptions) apply(cfg engine.Config) (engine.Config, error) {
	cfg.SweepInterval, cfg.StallAfter, cfg.TaskGrace = o.interval, o.stallAfter, o.taskGrace
	cfg.PartitionLease = o.partitionLease
	err := cfg.Validate()
	var le *engine.LimitError
	if errors.As(err, &le) {
		flag := map[string]string{"SweepInterval": "--sweep-interval", "StallAfter": "--stall-after", "TaskGrace": "--task-grace",
			"PartitionLease": "--partition-lease", "RoundLinger": "--round-linger"}[le.Field]
		return cfg, fmt.Errorf("%s %s: %w", o.command, flag, err)
	}
	return cfg, err
}

// checkpointOptions are the engine's checkpoint flags, in `weft engine`
// and `weft dev` (docs/checkpoints.md).
type checkpointOptions struct {
	ownership    *string
	steps, bytes *int
}

// runDepthFlag defines --max-run-depth on f: how deep child runs nest
// (engine.Config.MaxRunDepth).
func runDepthFlag(f *flags) *int {
	p := new(int)
	f.intVar(p, "max-run-depth", "WEFT_ENGINE_MAX_RUN_DEPTH", plan.DefaultMaxRunDepth,
		"how deep child runs nest: a subPlan step of a run at this depth fails with CHILD_RUN_REFUSED (docs/plans.md, \"Child runs\")")
	return p
}

// applyRunDepth sets depth, the value of --max-run-depth of command, on
// cfg, or refuses a depth below 1.
func applyRunDepth(cfg engine.Config, command string, depth int) (engine.Config, error) {
	if depth < 1 {
		return cfg, fmt.Errorf("%s --max-run-depth: %d is below 1", command, depth)
	}
	cfg.MaxRunDepth = depth
	return cfg, nil
}

// checkpointFlags defines the checkpoint flags on f.
func checkpointFlags(f *flags) checkpointOptions {
	return checkpointOptions{
		ownership: f.stringDefault("checkpoint-ownership", "WEFT_ENGINE_CHECKPOINT_OWNERSHIP", string(engine.SingleOwner),
			"single-owner (the deployment runs one engine owner per run) or cas-required (a round commits only if the run's head and checkpoint version are still what it read; needs a store with conditionalBatch); see docs/checkpoints.md"),
		steps: f.int("checkpoint-steps", "WEFT_ENGINE_CHECKPOINT_STEPS",
			"ended step attempts of a run between two of its checkpoints (0: default 50; negative: never by steps)"),
		bytes: f.int("checkpoint-bytes", "WEFT_ENGINE_CHECKPOINT_BYTES",
			"bytes of a run's event history between two of its checkpoints (0: default 1 MiB; negative: never by bytes)"),
	}
}

// apply sets the checkpoint options on cfg and returns it.
func (o checkpointOptions) apply(cfg engine.Config) engine.Config {
	cfg.CheckpointOwnership = engine.CheckpointOwnership(*o.ownership)
	cfg.CheckpointEverySteps, cfg.CheckpointEveryBytes = *o.steps, *o.bytes
	return cfg
}

// engineFlags defines the flags of `weft engine`; docs/configuration.md
// is generated from them (configdoc_test.go).
func engineFlags(env *environment) (*flags, engineOptions) {
	f := newFlags("engine", env)
	opt := engineOptions{
		urls:        backendFlags(f),
		streams:     streamFlags(f),
		ops:         opsFlag(f, "WEFT_ENGINE_OPS_ADDR", engineOpsAddr),
		concurrency: f.int("concurrency", "WEFT_ENGINE_CONCURRENCY", "rounds in flight per consumer (0: default)"),
		roundLinger: f.duration("round-linger", "WEFT_ENGINE_ROUND_LINGER", 0,
			fmt.Sprintf("how long a batch of fewer rounds than a full one waits for more, so the rounds of several runs share a transaction; "+
				"each round waits at most this long (0: %s, negative: off, at most %s)", engine.DefaultRoundLinger, engine.MaxRoundLinger)),
		checkpoints: checkpointFlags(f),
		sweep:       sweepFlags(f),
		taskKeyFile: taskKeyFileFlag(f),
		admission:   admissionFlags(f),
		maxRunDepth: runDepthFlag(f),
		replyPrefixes: f.stringDefault("reconcile-reply-prefixes", "WEFT_ENGINE_RECONCILE_REPLY_PREFIXES",
			strings.Join(engine.DefaultReconcileReplyPrefixes, ","),
			"reply subject prefixes the engine answers workers' reconciliation lookups on, comma-separated; a lookup with any other reply is dropped unanswered (the workers' inboxes, docs/security.md)"),
		eventForm: new(streams.EventForm),
	}
	eventFormFlag(f, opt.eventForm)
	return f, opt
}

// parseReplyPrefixes splits value, a comma-separated list of reply subject
// prefixes, into engine.Config.ReconcileReplyPrefixes. An empty list, an
// empty entry or one with white space is an error that names the flag.
func parseReplyPrefixes(value string) ([]string, error) {
	const name = "weft engine --reconcile-reply-prefixes"
	var out []string
	for i, p := range strings.Split(value, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			return nil, fmt.Errorf("%s: entry %d is empty", name, i+1)
		case strings.ContainsFunc(p, unicode.IsSpace):
			return nil, fmt.Errorf("%s: %q is not a subject prefix: it contains white space", name, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// runEngine is `weft engine`: the engine as a process of its own. Any
// number may run against one database and one NATS.
func runEngine(ctx context.Context, env *environment, args []string) error {
	f, opt := engineFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	cfg, err := opt.sweep.apply(opt.checkpoints.apply(engine.Config{Concurrency: *opt.concurrency, RoundLinger: *opt.roundLinger}))
	if err != nil {
		return err
	}
	if cfg, err = applyRunDepth(cfg, "weft engine", *opt.maxRunDepth); err != nil {
		return err
	}
	if cfg.ReconcileReplyPrefixes, err = parseReplyPrefixes(*opt.replyPrefixes); err != nil {
		return err
	}
	if err := opt.admission.open(env.logger); err != nil {
		return fmt.Errorf("weft engine %w", err)
	}
	cfg.Admission = opt.admission.limits()
	cfg.Streams = opt.streams.config() // the lanes streams and the heartbeat bucket
	cfg.EventForm = *opt.eventForm
	o, err := newOps(ctx, env, "weft-engine", *opt.ops, opsHint(f))
	if err != nil {
		return err
	}
	b, err := opt.urls.open(ctx, "engine")
	if err != nil {
		return err
	}
	defer b.close()
	if cfg.TaskKeys, err = loadTaskKeys(env, *opt.taskKeyFile); err != nil {
		return fmt.Errorf("weft engine: %w", err)
	}
	uses := []string{streams.EventsStream, streams.ResultsStream} // its consumers'
	checks := append(b.checks(uses...), consumerChecks(b, engineConsumers()...)...)
	return withOps(ctx, env, o, checks, func(ctx context.Context) error {
		if err := b.streams(ctx, opt.streams, env.logger, uses...); err != nil {
			return err
		}
		cfg.Logger, cfg.MeterProvider, cfg.TracerProvider = env.logger, o.meters, o.tracer
		eng, err := engine.New(b.pool, b.nc, cfg)
		if err != nil {
			return err
		}
		return withAdmissionWatch(ctx, opt.admission, o.meters, func(ctx context.Context) error {
			return runUntilDone(ctx, env.logger, "engine", eng.Run)
		})
	})
}

// workerOptions are the flags of `weft worker`.
type workerOptions struct {
	nats        *string
	streams     *streamOptions
	ops         *string
	queue       *string
	concurrency *int
	// httpGetAllow and httpGetAllowPrivate widen http-get's address policy.
	httpGetAllow        *string
	httpGetAllowPrivate *bool
	// lanePoll and laneInactive tune the tenant lanes (worker.Config).
	lanePoll, laneInactive time.Duration
}

// workerFlags defines the flags of `weft worker`; docs/configuration.md
// is generated from them (configdoc_test.go).
func workerFlags(env *environment) (*flags, workerOptions) {
	f := newFlags("worker", env)
	opt := workerOptions{
		nats:        natsFlag(f),
		streams:     streamFlags(f),
		ops:         opsFlag(f, "WEFT_WORKER_OPS_ADDR", workerOpsAddr),
		queue:       f.string("queue", "WEFT_WORKER_QUEUE", "task queue to serve (empty: default)"),
		concurrency: f.int("concurrency", "WEFT_WORKER_CONCURRENCY", "activities run at once (0: default)"),
		httpGetAllow: f.string("http-get-allow", "WEFT_WORKER_HTTP_GET_ALLOW",
			"CIDR prefixes http-get may reach although internal (loopback, private, link-local, metadata), comma-separated; by default only public addresses"),
		httpGetAllowPrivate: f.bool("http-get-allow-private", "WEFT_WORKER_HTTP_GET_ALLOW_PRIVATE", false,
			"let http-get reach every internal address except cloud metadata (169.254.169.254, fd00:ec2::254)"),
	}
	f.durationVar(&opt.lanePoll, "lane-poll-interval", "WEFT_WORKER_LANE_POLL_INTERVAL", worker.DefaultLanePollInterval,
		"how often an idle worker asks the stream which tenant lanes of its queue hold tasks")
	f.durationVar(&opt.laneInactive, "lane-inactive-threshold", "WEFT_WORKER_LANE_INACTIVE_THRESHOLD", streams.DefaultLaneInactiveThreshold,
		"how long a tenant lane's consumer lives with no worker pulling from it before the server deletes it (at least 1s)")
	return f, opt
}

// workerService names a worker of queue in NATS: "worker" for the default
// queue, "worker-<queue>" for another, the user deploy/nats.conf gives it,
// whose inbox (_INBOX_worker-<queue>.>) that user alone may read.
func workerService(queue string) string {
	if queue == "" || queue == "default" {
		return "worker"
	}
	return "worker-" + queue
}

// runWorker is `weft worker`: an activity worker with the demo activities
// (echo, sleep, fail-n-times, http-get). It needs NATS only.
func runWorker(ctx context.Context, env *environment, args []string) error {
	f, opt := workerFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	allow, err := activityworker.ParsePrefixes(*opt.httpGetAllow)
	if err != nil {
		return fmt.Errorf("--http-get-allow: %w", err)
	}
	o, err := newOps(ctx, env, "weft-worker", *opt.ops, opsHint(f))
	if err != nil {
		return err
	}
	b, err := openNATS(*opt.nats, workerService(*opt.queue))
	if err != nil {
		return err
	}
	defer b.close()
	uses := []string{streams.TasksStream, streams.ResultsStream} // takes tasks, reports results
	consumers, err := workerConsumers(*opt.queue)
	if err != nil {
		return err
	}
	checks := append(b.checks(uses...), consumerChecks(b, consumers...)...)
	return withOps(ctx, env, o, checks, func(ctx context.Context) error {
		if err := b.streams(ctx, opt.streams, env.logger, uses...); err != nil {
			return err
		}
		w, err := activityworker.New(b.nc, activityworker.Config{
			Queue: *opt.queue, Concurrency: *opt.concurrency,
			Logger: env.logger, MeterProvider: o.meters, TracerProvider: o.tracer,
			HTTPGetAllow: allow, HTTPGetAllowPrivate: *opt.httpGetAllowPrivate,
			LanePollInterval: opt.lanePoll, LaneInactiveThreshold: opt.laneInactive,
		})
		if err != nil {
			return err
		}
		return runUntilDone(ctx, env.logger, "activity worker", w.Run)
	})
}
