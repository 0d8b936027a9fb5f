package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/weftrun/weft/internal/schema"
)

func runMigrate(ctx context.Context, env *environment, args []string) error {
	f := newFlags("migrate", env)
	dbURL := f.string("database-url", "WEFT_DATABASE_URL", "Postgres connection URL")
	if err := f.parse(args); err != nil {
		return err
	}
	pool, err := openPool(ctx, *dbURL)
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
		return err
	}
	_, err = fmt.Fprintf(env.stdout, "applied migrations %v\n", applied)
	return err
}

// redact hides a password in a connection URL before it is printed.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable url>"
	}
	return u.Redacted()
}
