package weftest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/pkg/schema"
)

// templateLock is the advisory lock key under which one process, of all
// the test binaries that run at once, builds the template database.
const templateLock = 0x77656674_74706c // "weft" "tpl"

// templates remembers, per admin URL, the template database this process
// made sure of: building it is done once per process.
var templates sync.Map // admin URL -> *templateOnce

type templateOnce struct {
	once sync.Once
	name string
	err  error
}

// migratedTemplate returns the name of a database that holds the schema
// of this binary's migrations and nothing else, to copy for each test
// (CREATE DATABASE … TEMPLATE): copying it is several times faster than
// migrating a fresh database. Its name carries a hash of the migrations,
// so a change of schema gets a template of its own; the first test process
// to need it builds it, under an advisory lock, under a temporary name that
// it renames when done, so no process ever copies a half-built template.
// Templates of older schemas stay in the cluster (a few MB each) until
// someone drops them.
func migratedTemplate(ctx context.Context, adminURL string) (string, error) {
	v, _ := templates.LoadOrStore(adminURL, &templateOnce{})
	o := v.(*templateOnce)
	o.once.Do(func() { o.name, o.err = ensureTemplate(ctx, adminURL) })
	return o.name, o.err
}

// ensureTemplate builds the template database unless it exists.
func ensureTemplate(ctx context.Context, adminURL string) (string, error) {
	name, err := templateName()
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("weftest: connect admin: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return "", fmt.Errorf("weftest: lock the template: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLock) }()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("weftest: look for the template: %w", err)
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("weftest: drop a half-built template: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", fmt.Errorf("weftest: create the template: %w", err)
	}
	if err := migrate(ctx, adminURL, building); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("weftest: name the template: %w", err)
	}
	return name, nil
}

// migrate applies the schema to database name, and closes its connections,
// since a database with connections cannot be a template.
func migrate(ctx context.Context, adminURL, name string) error {
	cfg, err := pgxpool.ParseConfig(adminURL)
	if err != nil {
		return fmt.Errorf("weftest: parse url: %w", err)
	}
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("weftest: pool: %w", err)
	}
	defer pool.Close()
	if _, err := schema.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("weftest: migrate the template: %w", err)
	}
	return nil
}

// templateName is "weft_tpl_" and a hash of every migration.
func templateName() (string, error) {
	migrations, err := schema.Migrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range migrations {
		_, _ = fmt.Fprintf(h, "%d\x00%s\x00%s\x00", m.Version, m.Name, m.SQL)
	}
	return "weft_tpl_" + hex.EncodeToString(h.Sum(nil))[:16], nil
}
