// Package weftest is Weft's test harness, for Weft's own tests and for
// tests of code built on Weft: a fresh, migrated Postgres database per test
// and an embedded NATS JetStream server (or a cluster of them) per test.
// Nothing here is a mock: tests talk to a real Postgres and a real
// nats-server. It is public so that pkg/ tests, like pkg/ itself, import
// nothing internal: pkg/ could become a module of its own.
//
// Postgres comes from WEFT_TEST_DATABASE_URL, else the local server at
// 127.0.0.1:5432. When WEFT_TEST_DATABASE_URL is unset and no local server
// answers, the harness starts a private instance from the installed
// PostgreSQL binaries (see internal/boot/pgboot) and stops it when the package's
// tests end. When neither is possible, the test fails and says what to
// install: it never skips.
//
// Every package that uses the harness calls Main from its TestMain.
package weftest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/weftrun/weft/internal/boot/pgboot"
)

// DefaultDatabaseURL is used when WEFT_TEST_DATABASE_URL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

var admin struct {
	once     sync.Once
	url      string
	err      error
	instance *pgboot.Instance
}

// atExit holds what AtExit registered.
var atExit struct {
	mu    sync.Mutex
	funcs []func()
}

// AtExit registers f for Main to call once the package's tests have run,
// in the reverse order of registration: the cleanup of a fixture the
// package's tests share (a binary built once), which no one test's
// Cleanup may remove while others still use it.
func AtExit(f func()) {
	atExit.mu.Lock()
	defer atExit.mu.Unlock()
	atExit.funcs = append(atExit.funcs, f)
}

// MainWithChild is Main for a package whose crash tests run the test
// binary again as a child process, with the environment variable env set:
// that process is the child, and runs child instead of the tests. A child
// crashes (exits with the code its test expects) where its test wanted; if
// child returns instead, the process reports why and exits 1.
func MainWithChild(m *testing.M, env string, child func() error) {
	runNATSNodeIfAsked()
	if os.Getenv(env) != "" {
		if err := child(); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
		}
		os.Exit(1)
	}
	Main(m)
}

// Main runs the package's tests, stops a private Postgres the harness may
// have started, and fails the run if goroutines leaked. In a process a
// NATSCluster started, it runs that cluster's node instead.
func Main(m *testing.M) {
	runNATSNodeIfAsked()
	code := m.Run()
	atExit.mu.Lock()
	funcs := atExit.funcs
	atExit.mu.Unlock()
	for _, f := range slices.Backward(funcs) {
		f()
	}
	if admin.instance != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := admin.instance.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "weftest: stop private postgres:", err)
		}
		cancel()
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			fmt.Fprintln(os.Stderr, "weftest: goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// AdminURL returns the URL of a superuser connection to the test server,
// starting a private instance if needed. It fails the test with what to
// install when no Postgres can be had.
func AdminURL(t testing.TB) string {
	t.Helper()
	admin.once.Do(func() { admin.url, admin.err = resolveAdmin() })
	if admin.err != nil {
		t.Fatalf("weftest: no PostgreSQL for tests: %v", admin.err)
	}
	return admin.url
}

func resolveAdmin() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if url := os.Getenv("WEFT_TEST_DATABASE_URL"); url != "" {
		if err := ping(ctx, url); err != nil {
			return "", fmt.Errorf("WEFT_TEST_DATABASE_URL=%s does not answer: %w", url, err)
		}
		return url, nil
	}
	pingCtx, pingCancel := context.WithTimeout(ctx, 3*time.Second)
	err := ping(pingCtx, DefaultDatabaseURL)
	pingCancel()
	if err == nil {
		return DefaultDatabaseURL, nil
	}
	inst, startErr := pgboot.Start(ctx, pgboot.Config{})
	if startErr != nil {
		return "", fmt.Errorf("no server at %s (%w), and a private one could not start: %w",
			DefaultDatabaseURL, err, startErr)
	}
	admin.instance = inst
	return inst.URL(), nil
}

func ping(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	return conn.Ping(ctx)
}

// DB is a fresh, migrated database that belongs to one test.
type DB struct {
	// Pool is connected to the database and closed when the test ends.
	Pool *pgxpool.Pool
	// URL connects to the database, for code under test that dials itself
	// (a child process, a second service).
	URL string
	// Name is the database's name.
	Name string
}

// NewDB creates a database for t with the schema applied (a copy of a
// migrated template database, migratedTemplate), and drops the database
// (terminating its connections) when t ends. Tests that each call NewDB
// may run in parallel.
func NewDB(t testing.TB) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adminURL := AdminURL(t)
	name := "weft_t_" + randomHex(8)
	template, err := migratedTemplate(ctx, adminURL)
	if err != nil {
		t.Fatalf("weftest: %v", err)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatalf("weftest: connect admin: %v", err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
	_ = conn.Close(ctx)
	if err != nil {
		t.Fatalf("weftest: create database: %v", err)
	}
	t.Cleanup(func() { dropDB(t, adminURL, name) })

	cfg, err := pgxpool.ParseConfig(adminURL)
	if err != nil {
		t.Fatalf("weftest: parse url: %v", err)
	}
	cfg.ConnConfig.Database = name
	cfg.MaxConns = 16
	url := connString(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("weftest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return &DB{Pool: pool, URL: url, Name: name}
}

func dropDB(t testing.TB, adminURL, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Errorf("weftest: drop %s: %v", name, err)
		return
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("weftest: drop %s: %v", name, err)
	}
}

func connString(c *pgx.ConnConfig) string {
	user := c.User
	if c.Password != "" {
		user += ":" + c.Password
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", user, c.Host, c.Port, c.Database)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
