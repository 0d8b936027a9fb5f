package soak

import (
	"context"
	"errors"

	"github.com/weftrun/weft/internal/boot/pgboot"
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
	if err := primary.RequireSyncStandby(ctx); err != nil {
		p.stop(ctx)
		return nil, "", err
	}
	return p, pgboot.FailoverURL(primary, p.standby), nil
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
