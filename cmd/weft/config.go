package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/cmd/weft/internal/help"
)

// flags wraps a FlagSet whose every flag also reads an environment variable.
// Precedence: command-line flag, then environment variable, then default.
// Each flag's usage ends with "(env KEY)"; docs/configuration.md is
// generated from these flag sets (configdoc_test.go).
type flags struct {
	*flag.FlagSet
	env     *environment
	envErrs []error
	// envKeys maps a flag's name to its environment variable.
	envKeys map[string]string
	// sections are the help's text after the flags (addSection).
	sections []string
}

// newFlags returns the flag set of `weft <name>`; its messages go to
// env.stderr and its flags read env's variables. -h prints
// "Usage: weft <name> [flags]", the flags and the sections (help.Write).
func newFlags(name string, env *environment) *flags {
	fs := flag.NewFlagSet("weft "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	f := &flags{FlagSet: fs, env: env, envKeys: map[string]string{}}
	fs.Usage = func() { help.Write(fs.Output(), fs.Name()+" [flags]", fs, f.sections...) }
	return f
}

// addSection adds a section to the help after the flags: a heading line
// ending in ":" and its text, which a flag's usage may refer to as
// "<heading>" below.
func (f *flags) addSection(section string) { f.sections = append(f.sections, section) }

// string adds a string flag whose default is the value of envKey.
func (f *flags) string(name, envKey, usage string) *string {
	f.envKeys[name] = envKey
	return f.String(name, f.env.getenv(envKey), usage+envNote(envKey))
}

// stringDefault adds a string flag with default def, which envKey
// overrides when set.
func (f *flags) stringDefault(name, envKey, def, usage string) *string {
	p := new(string)
	f.stringVar(p, name, envKey, def, usage)
	return p
}

func (f *flags) int(name, envKey, usage string) *int {
	p := new(int)
	f.intVar(p, name, envKey, 0, usage)
	return p
}

func (f *flags) duration(name, envKey string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	f.durationVar(p, name, envKey, def, usage)
	return p
}

func (f *flags) bool(name, envKey string, def bool, usage string) *bool {
	p := new(bool)
	f.boolVar(p, name, envKey, def, usage)
	return p
}

// stringVar adds a string flag stored in p, with default def, which envKey
// overrides when set. intVar, boolVar and durationVar do the same for
// their types.
func (f *flags) stringVar(p *string, name, envKey, def, usage string) {
	f.StringVar(p, name, def, usage+envNote(envKey))
	f.fromEnv(name, envKey)
}

func (f *flags) intVar(p *int, name, envKey string, def int, usage string) {
	f.IntVar(p, name, def, usage+envNote(envKey))
	f.fromEnv(name, envKey)
}

func (f *flags) boolVar(p *bool, name, envKey string, def bool, usage string) {
	f.BoolVar(p, name, def, usage+envNote(envKey))
	f.fromEnv(name, envKey)
}

// durationVar takes a Go duration: 500ms, 30s, 24h.
func (f *flags) durationVar(p *time.Duration, name, envKey string, def time.Duration, usage string) {
	f.DurationVar(p, name, def, usage+envNote(envKey))
	f.fromEnv(name, envKey)
}

// envNote is the end of a flag's usage: which variable also sets it.
func envNote(envKey string) string { return " (env " + envKey + ")" }

// fromEnv sets flag name from envKey when that variable is set; a bad value
// is reported by parse.
func (f *flags) fromEnv(name, envKey string) {
	f.envKeys[name] = envKey
	if v := f.env.getenv(envKey); v != "" {
		if err := f.Set(name, v); err != nil {
			f.envErrs = append(f.envErrs, fmt.Errorf("%s=%q: %w", envKey, v, err))
		}
	}
}

// parse parses args, which may hold flags only; -h prints the flags and
// returns errUsage.
func (f *flags) parse(args []string) error {
	_, err := f.parseOperands(args, 0)
	return err
}

// parseOperands parses args and returns the operands after the flags, at
// most max of them.
func (f *flags) parseOperands(args []string, max int) ([]string, error) {
	if err := errors.Join(f.envErrs...); err != nil {
		return nil, err
	}
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errUsage
		}
		return nil, err
	}
	if f.NArg() > max {
		return nil, fmt.Errorf("%s: unexpected arguments %q", f.Name(), f.Args()[max:])
	}
	return f.Args(), nil
}

// DefaultMaxConns is the size of a command's Postgres pool unless its URL
// sets pool_max_conns. pgx's own default, the number of CPUs and at least
// 4, is too few on a small machine: the engine alone keeps a transaction
// in flight per shard (Concurrency shards on each of its two consumers),
// beside its timer, sweep and run-queue loops, and `weft dev` runs every
// service on one pool.
const DefaultMaxConns = 16

// openPool connects to Postgres and checks the connection.
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("no database: set WEFT_DATABASE_URL or --database-url")
	}
	cfg, err := poolConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
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

// poolConfig parses url, a Postgres URL or keyword/value string, into a
// pool of DefaultMaxConns connections unless it sets pool_max_conns.
func poolConfig(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	return cfg, nil
}
