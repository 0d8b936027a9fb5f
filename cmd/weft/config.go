package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
)

// flags wraps a FlagSet whose every flag also reads an environment variable.
// Precedence: command-line flag, then environment variable, then default.
type flags struct {
	*flag.FlagSet
	env     *environment
	envErrs []error
}

func newFlags(name string, env *environment) *flags {
	fs := flag.NewFlagSet("weft "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	return &flags{FlagSet: fs, env: env}
}

func (f *flags) string(name, envKey, usage string) *string {
	return f.String(name, f.env.getenv(envKey), usage+" (env "+envKey+")")
}

func (f *flags) int(name, envKey string, def int, usage string) *int {
	p := f.Int(name, def, usage+" (env "+envKey+")")
	f.fromEnv(name, envKey)
	return p
}

func (f *flags) bool(name, envKey string, def bool, usage string) *bool {
	p := f.Bool(name, def, usage+" (env "+envKey+")")
	f.fromEnv(name, envKey)
	return p
}

// fromEnv sets flag name from envKey when that variable is set; a bad value
// is reported by parse.
func (f *flags) fromEnv(name, envKey string) {
	if v := f.env.getenv(envKey); v != "" {
		if err := f.Set(name, v); err != nil {
			f.envErrs = append(f.envErrs, fmt.Errorf("%s=%q: %w", envKey, v, err))
		}
	}
}

// parse parses args; -h prints the flags and returns errUsage.
func (f *flags) parse(args []string) error {
	if err := errors.Join(f.envErrs...); err != nil {
		return err
	}
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", f.Name(), f.Args())
	}
	return nil
}

// openPool connects to Postgres and checks the connection.
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("no database: set WEFT_DATABASE_URL or --database-url")
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database %s does not answer: %w", redact(url), err)
	}
	return pool, nil
}

// backendURLs are the --database-url and --nats-url of a service command.
type backendURLs struct{ db, nats *string }

// backendFlags adds --database-url and --nats-url to f.
func backendFlags(f *flags) backendURLs {
	return backendURLs{
		db:   f.string("database-url", "WEFT_DATABASE_URL", "Postgres connection URL"),
		nats: f.string("nats-url", "WEFT_NATS_URL", "NATS server URL"),
	}
}

// open dials NATS as name (making sure Weft's streams exist when
// ensureStreams is set) and opens the Postgres pool. closeAll closes both.
func (u backendURLs) open(ctx context.Context, name string, ensureStreams bool) (pool *pgxpool.Pool, nc *nats.Conn, closeAll func(), err error) {
	if ensureStreams {
		nc, err = connectStreams(ctx, *u.nats, name)
	} else {
		nc, err = connectNATS(*u.nats, name)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if pool, err = openPool(ctx, *u.db); err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return pool, nc, func() { pool.Close(); nc.Close() }, nil
}
