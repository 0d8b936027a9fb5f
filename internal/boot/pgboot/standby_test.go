package pgboot_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/pgboot"
)

// promoteWait bounds the wait for a write to succeed after the primary
// was killed and the standby promoted: it only keeps a failover that never
// completes from hanging the test.
const promoteWait = time.Minute

// TestPromotedSyncStandbyHoldsEveryAcknowledgedCommit is a failover with
// synchronous replication: a client writes through a multi-host URL with
// target_session_attrs=read-write, the primary is killed with SIGKILL,
// the standby promoted, and the same pool's next write lands on the new
// primary, which holds every commit the old one acknowledged (RPO 0).
func TestPromotedSyncStandbyHoldsEveryAcknowledgedCommit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary, err := pgboot.Start(ctx, pgboot.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = primary.Stop(context.Background()) })
	standby, err := pgboot.StartStandby(ctx, primary)
	require.NoError(t, err)
	t.Cleanup(func() { _ = standby.Stop(context.Background()) })

	require.NoError(t, primary.RequireSyncStandby(ctx))
	pool, err := pgxpool.New(ctx, pgboot.FailoverURL(primary, standby))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var sync bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_stat_replication WHERE sync_state = 'sync'").Scan(&sync))
	require.True(t, sync, "the pool is on the primary, which replicates synchronously")

	_, err = pool.Exec(ctx, "CREATE TABLE acked (n int PRIMARY KEY)")
	require.NoError(t, err)
	const acked = 200
	for n := range acked {
		_, err := pool.Exec(ctx, "INSERT INTO acked VALUES ($1)", n)
		require.NoError(t, err)
	}

	require.NoError(t, primary.Kill())
	require.NoError(t, standby.Promote(ctx))
	// The pool's writes fail until it finds the promoted standby; the
	// one that succeeds reports the server that took it.
	var wrote struct {
		port       int
		inRecovery bool
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := pool.QueryRow(ctx, "INSERT INTO acked VALUES ($1) RETURNING inet_server_port(), pg_is_in_recovery()", acked).
			Scan(&wrote.port, &wrote.inRecovery)
		assert.NoError(c, err, "a write after the failover")
	}, promoteWait, 10*time.Millisecond)
	standbyURL, err := url.Parse(standby.URL())
	require.NoError(t, err)
	require.Equal(t, standbyURL.Port(), strconv.Itoa(wrote.port), "the write after the failover went to the promoted standby")
	require.False(t, wrote.inRecovery, "the standby took the write as a primary")

	var count int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM acked").Scan(&count))
	require.Equal(t, acked+1, count, "every acknowledged commit survived the failover")
}
