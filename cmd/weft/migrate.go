package main

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/schema"
	"github.com/weftrun/weft/pkg/streams"
)

// migrateOptions are the flags of `weft migrate`.
type migrateOptions struct {
	db, nats, grants *string
	replicas         int
	partitions       *int
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
	opt.partitions = f.int("partitions", "WEFT_PARTITIONS",
		fmt.Sprintf("partitions of the runs, which engines divide among them, 1 to %d, fixed when the streams are created (0: the streams' own, or %d for new ones; docs/scaling.md)",
			streams.MaxPartitions, streams.DefaultPartitions))
	return f, opt
}

// runMigrate is `weft migrate`: it applies the Postgres schema, then the
// grants file when one is given, then, with a NATS URL, Weft's streams.
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
	if err := ensureStreams(ctx, *opt.nats, cfg); err != nil {
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

// ensureStreams creates or updates Weft's streams, as cfg defines them, on
// the NATS server at natsURL.
func ensureStreams(ctx context.Context, natsURL string, cfg streams.Config) error {
	nc, err := connectNATS(natsURL, "migrate")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if err := streams.Ensure(ctx, js, cfg); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// redact hides a password in a connection URL before it is printed.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable url>"
	}
	return u.Redacted()
}
