package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/pkg/schema"
	"github.com/weftrun/weft/pkg/streams"
)

// migrateOptions are the flags of `weft migrate`.
type migrateOptions struct {
	db, nats, grants *string
	replicas         int
	partitions       *int
	placementWait    time.Duration
}

// migrateFlags defines the flags of `weft migrate`; docs/configuration.md
// is generated from them (configdoc_test.go).
func migrateFlags(env *environment) (*flags, *migrateOptions) {
	f := newFlags("migrate", env)
	opt := &migrateOptions{
		db: f.string("database-url", "WEFT_DATABASE_URL", "Postgres connection URL, as the role that owns Weft's schema"),
		nats: natsFlagUsage(f,
			"NATS server URL; when set, Weft's JetStream streams are created or updated too (credentials may be given in it)"),
		grants: f.string("grants-file", "WEFT_GRANTS_FILE",
			"SQL file run after the migrations in one transaction, e.g. the per-service grants of deploy/postgres/grants.sql"),
	}
	replicasFlag(f, &opt.replicas)
	f.durationVar(&opt.placementWait, "placement-wait", "WEFT_PLACEMENT_WAIT", time.Minute,
		"how long to go on trying a stream the JetStream cluster cannot place or serve yet, as while a cluster forms or regains its quorum; 0 fails at once")
	opt.partitions = f.int("partitions", "WEFT_PARTITIONS",
		fmt.Sprintf("partitions of the runs, which engines divide among them, 1 to %d, fixed when the streams are created (0: the streams' own, or %d for new ones; docs/scaling.md)",
			streams.MaxPartitions, streams.DefaultPartitions))
	return f, opt
}

// runMigrate is `weft migrate`: it applies the Postgres schema, then the
// grants file when one is given, then, with a NATS URL, Weft's streams,
// every Weft stream on the server given --stream-replicas copies.
// It runs before every other weft service of the compose topology, so it
// is the one that reports a secrets mount of the wrong shape
// (checkSecretsMount).
func runMigrate(ctx context.Context, env *environment, args []string) error {
	f, opt := migrateFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	if err := checkSecretsMount(env.getenv); err != nil {
		return fmt.Errorf("weft migrate: %w", err)
	}
	cfg := streams.Config{Replicas: opt.replicas, Partitions: *opt.partitions}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("weft migrate --partitions: %w", err)
	}
	pool, err := openPool(ctx, *opt.db)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := schema.Migrate(ctx, pool)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		_, err = fmt.Fprintln(env.stdout, "schema is up to date")
	} else {
		_, err = fmt.Fprintf(env.stdout, "applied migrations %v\n", applied)
	}
	if err != nil {
		return err
	}
	if *opt.grants != "" {
		if err := applyGrants(ctx, pool, *opt.grants); err != nil {
			return err
		}
		if _, err := fmt.Fprintln(env.stdout, "applied grants from", *opt.grants); err != nil {
			return err
		}
	}
	if *opt.nats == "" {
		return nil
	}
	if err := ensureStreamsPlaced(ctx, *opt.nats, cfg, opt.placementWait, env); err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.stdout, "streams are up to date")
	return err
}

// applyGrants runs the SQL file at path in one transaction.
func applyGrants(ctx context.Context, pool *pgxpool.Pool, path string) error {
	sql, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after the commit
	if _, err := tx.Exec(ctx, string(sql)); err != nil {
		return fmt.Errorf("grants: %s: %w", path, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("grants: %s: %w", path, err)
	}
	return nil
}

// placementRetry is how long ensureStreamsPlaced waits between tries.
const placementRetry = 500 * time.Millisecond

// ensureStreamsPlaced connects to natsURL as the migrate user and runs
// ensureStreams there, again on the same connection while the cluster
// cannot serve it yet (streams.NotReady: a cluster still forming, whose
// meta leader has not heard from every peer, or still electing leaders),
// until wait has passed; each wait is reported on
// stderr. Every try is whole: ensureStreams changes only what is not yet
// as asked, so a try after a partial one prints only what it changes.
func ensureStreamsPlaced(ctx context.Context, natsURL string, cfg streams.Config, wait time.Duration, env *environment) error {
	nc, err := connectNATS(natsURL, "migrate")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = ensureStreams(ctx, js, cfg, env.stdout)
		if err == nil || !streams.NotReady(err) || ctx.Err() != nil || !time.Now().Before(deadline) {
			return err
		}
		if _, werr := fmt.Fprintf(env.stderr, "waiting for the JetStream cluster to place the streams (--placement-wait %v): %v\n",
			wait, err); werr != nil {
			return werr
		}
		if err := periodic.Sleep(ctx, placementRetry); err != nil {
			return err
		}
	}
}

// ensureStreams gives every Weft stream on js's server,
// the lanes streams and the heartbeat bucket the engine made included,
// cfg.Replicas copies (streams.Replicate), printing one line to out for
// each stream it changed, then creates or updates Weft's streams as cfg
// defines them (streams.Ensure). Replicating first is what has every
// existing stream's change printed; Ensure then creates the missing ones
// with cfg.Replicas and changes nothing more of the replicas.
func ensureStreams(ctx context.Context, js jetstream.JetStream, cfg streams.Config, out io.Writer) error {
	replicas := cfg.WithDefaults().Replicas
	changes, err := streams.Replicate(ctx, js, replicas)
	for _, c := range changes {
		line := c.String()
		if c.To < c.From {
			line += " (fewer copies: --stream-replicas asks for " + strconv.Itoa(c.To) + ")"
		}
		if _, werr := fmt.Fprintln(out, line); werr != nil {
			return werr
		}
	}
	if err == nil {
		err = streams.Ensure(ctx, js, cfg)
	}
	if err != nil {
		return replicasHint(fmt.Errorf("jetstream: %w", err), replicas)
	}
	return nil
}

// replicasHint adds what to do to err when it is the server's refusal of
// a stream change and replicas asks for more than one copy: the likely
// cause is a server that is not (yet) a cluster of that many.
func replicasHint(err error, replicas int) error {
	var apiErr *jetstream.APIError
	var replErr *streams.ReplicasError
	if replicas == 1 || (!errors.As(err, &apiErr) && !errors.As(err, &replErr)) {
		return err
	}
	return fmt.Errorf("%w\nweft migrate --stream-replicas %d needs a JetStream cluster of at least %d servers, all of them running: "+
		"start the cluster first, or run with --stream-replicas set to the servers there are (docs/deploy.md, \"Moving to the cluster\")",
		err, replicas, replicas)
}

// redact hides a password in a connection URL before it is printed.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable url>"
	}
	return u.Redacted()
}
