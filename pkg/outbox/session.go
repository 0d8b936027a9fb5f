package outbox

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lockClass is the first key of every outbox partition lock,
// pg_try_advisory_lock(lockClass, partition); "woxb" in ASCII.
const lockClass int32 = 0x776f7862

// heartbeatTimeout bounds the session's lock query, which doubles as its
// heartbeat: a session that cannot answer in time is treated as lost, and
// its workers stop.
const heartbeatTimeout = 10 * time.Second

// session is a relay's dedicated Postgres connection. It LISTENs on
// NotifyChannel and holds the relay's partition locks: when it dies, the
// server drops the locks and a standby relay can take them. Only the
// relay's control goroutine uses it.
type session struct {
	conn *pgx.Conn
}

// connect opens a session: a connection of its own (not from the pool, so
// the locks live exactly as long as it does) that listens for wake-ups.
func (r *Relay) connect(ctx context.Context) (*session, error) {
	cfg := r.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = "weft-outbox-relay"
	// The server probes the relay's TCP connection and ends the session
	// (releasing its locks for a standby) within about 25s of the relay's
	// host going silent, instead of the system default of hours.
	cfg.RuntimeParams["tcp_keepalives_idle"] = "10"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "5"
	cfg.RuntimeParams["tcp_keepalives_count"] = "3"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("outbox: relay session: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("outbox: relay session: listen: %w", err)
	}
	return &session{conn: conn}, nil
}

// tryLocks tries the lock of each partition in want and returns those won.
func (s *session) tryLocks(ctx context.Context, want []int32) ([]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	rows, err := s.conn.Query(ctx,
		`SELECT p, pg_try_advisory_lock($1::int4, p) FROM unnest($2::int4[]) AS p`, lockClass, want)
	if err != nil {
		return nil, fmt.Errorf("outbox: relay session: lock partitions: %w", err)
	}
	var won []int32
	for rows.Next() {
		var p int32
		var ok bool
		if err := rows.Scan(&p, &ok); err != nil {
			rows.Close()
			return nil, fmt.Errorf("outbox: relay session: lock partitions: %w", err)
		}
		if ok {
			won = append(won, p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox: relay session: lock partitions: %w", err)
	}
	return won, nil
}

// wait returns the next notification, or nil at the deadline. It returns
// an error when ctx ends or the connection fails.
func (s *session) wait(ctx context.Context, until time.Time) (*pgconn.Notification, error) {
	wctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	n, err := s.conn.WaitForNotification(wctx)
	if err == nil {
		return n, nil
	}
	if ctx.Err() == nil && wctx.Err() != nil && !s.conn.IsClosed() {
		return nil, nil // the deadline: time to retry the locks
	}
	return nil, fmt.Errorf("outbox: relay session: wait: %w", err)
}

// close ends the session, which releases its locks.
func (s *session) close(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = s.conn.Close(cctx)
}

// wakeFor wakes the worker of the partition named in a notification
// payload, or every worker when the payload names none of them.
func wakeFor(workers map[int]*worker, payload string) {
	if p, err := strconv.Atoi(payload); err == nil {
		if w := workers[p]; w != nil {
			w.poke()
			return
		}
		if p >= 0 && p < Partitions {
			return // a partition another relay serves
		}
	}
	for _, w := range workers {
		w.poke()
	}
}
