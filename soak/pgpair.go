package soak

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/pgboot"
)

// pgFailoverKind is the fault of a soak with SOAK_PG_FAILOVER: SIGKILL of
// the primary, promotion of its synchronous standby. There is one standby,
// so it is injected at most once.
const pgFailoverKind = "pg-failover"

// pgPair is a private Postgres primary with a synchronous streaming
// standby, which the services reach through one multi-host URL that
// settles for the writable server.
type pgPair struct {
	primary, standby *pgboot.Instance
}

// syncWait bounds the wait for the standby to replicate synchronously.
const syncWait = time.Minute

// startPGPair starts the pair and returns the superuser URL of its
// "postgres" database, over both hosts, read-write.
func startPGPair(ctx context.Context) (*pgPair, string, error) {
	primary, err := pgboot.Start(ctx, pgboot.Config{})
	if err != nil {
		return nil, "", err
	}
	p := &pgPair{primary: primary}
	if p.standby, err = pgboot.StartStandby(ctx, primary); err != nil {
		p.stop(ctx)
		return nil, "", err
	}
	if err := requireSync(ctx, primary.URL()); err != nil {
		p.stop(ctx)
		return nil, "", err
	}
	return p, failoverURL(primary.URL(), p.standby.URL()), nil
}

// requireSync makes the primary commit only once a standby has the
// commit, and waits until one does.
func requireSync(ctx context.Context, primaryURL string) error {
	conn, err := pgx.Connect(ctx, primaryURL)
	if err != nil {
		return fmt.Errorf("postgres primary: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	for _, sql := range []string{"ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("postgres primary: %s: %w", sql, err)
		}
	}
	return poll(ctx, syncWait, func() (bool, error) {
		var sync bool
		err := conn.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_stat_replication WHERE sync_state = 'sync'").Scan(&sync)
		return sync, err
	})
}

// failoverURL is primaryURL over both hosts, settling for the writable one.
func failoverURL(primaryURL, standbyURL string) string {
	u, _ := url.Parse(primaryURL) // pgboot's own URLs
	s, _ := url.Parse(standbyURL)
	u.Host += "," + s.Host
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String()
}

// failover kills the primary as a crash of its machine would and promotes
// the standby; the services' pools find it through their URL.
func (p *pgPair) failover(ctx context.Context) error {
	if p == nil {
		return errors.New("no Postgres standby: run with SOAK_PG_FAILOVER=1")
	}
	if err := p.primary.Kill(); err != nil {
		return err
	}
	return p.standby.Promote(ctx)
}

// stop stops both servers and removes their folders.
func (p *pgPair) stop(ctx context.Context) {
	if p == nil {
		return
	}
	if p.standby != nil {
		_ = p.standby.Stop(ctx)
	}
	_ = p.primary.Stop(ctx)
}
