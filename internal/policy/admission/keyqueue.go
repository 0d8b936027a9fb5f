package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the key queue's reads and deletes run on: a pool or a
// transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Wake is a slot a run left (engine_key_wakes): its waiters are offered
// a start, as many as it has room for (OffersTx), and the wake is then
// done (DoneWakes).
type Wake struct {
	Slot    string
	WokenAt time.Time
}

// Wakes returns up to n wakes, oldest first.
func Wakes(ctx context.Context, db DB, n int) ([]Wake, error) {
	rows, err := db.Query(ctx, `SELECT slot, woken_at FROM engine_key_wakes ORDER BY woken_at LIMIT $1`, n)
	if err != nil {
		return nil, fmt.Errorf("admission: read key wakes: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Wake, error) {
		var w Wake
		return w, r.Scan(&w.Slot, &w.WokenAt)
	})
}

// DoneWakes deletes wakes, each unless a run left its slot again since
// it was read: that wake is served next.
func DoneWakes(ctx context.Context, db DB, wakes []Wake) error {
	if len(wakes) == 0 {
		return nil
	}
	slots, at := make([]string, len(wakes)), make([]time.Time, len(wakes))
	for i, w := range wakes {
		slots[i], at[i] = w.Slot, w.WokenAt
	}
	_, err := db.Exec(ctx, `DELETE FROM engine_key_wakes w USING unnest($1::text[], $2::timestamptz[]) AS d(slot, at)
		WHERE w.slot = d.slot AND w.woken_at <= d.at`, slots, at)
	if err != nil {
		return fmt.Errorf("admission: delete key wakes: %w", err)
	}
	return nil
}

// Offer is a wake whose slot has room and waiters: the waiters to offer
// a start, in its queue's order.
type Offer struct {
	Wake   Wake
	RunIDs []string
}

// OffersTx returns, holding the locks of every slot of wakes until tx
// ends, the offers the wakes make: for each slot, the waiters its room
// admits, at most max, in its queue's order (higher priorities first;
// within one, first come, first served, or, for a GROUP_ROUND_ROBIN
// slot, one run of each group in turn, from the group after the one it
// last started, engine_key_turns, which it records). A slot's room is the
// limit its queue's head evaluated less its holders. The wakes that
// offer nothing (no waiter, or no room: the next run to leave wakes the
// slot again) are deleted in tx; the caller deletes the others
// (DoneWakes) once it has offered their runs a start, whose rounds each
// check the run's room again.
//
// Holding the locks orders the scan after any admission that counted a
// slot full before the wake's run left it: that run's wait has committed
// when the scan reads the queue, so no waiter is missed.
func OffersTx(ctx context.Context, tx pgx.Tx, wakes []Wake, max int) ([]Offer, error) {
	names, slots, at := make([]string, len(wakes)), make([]string, len(wakes)), make([]time.Time, len(wakes))
	for i, w := range wakes {
		names[i], slots[i], at[i] = keyLockName(w.Slot), w.Slot, w.WokenAt
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(n)) FROM (SELECT n FROM unnest($1::text[]) n ORDER BY n) s`, names); err != nil {
		return nil, fmt.Errorf("admission: lock slots: %w", err)
	}
	rows, err := tx.Query(ctx, roomsSQL, slots, at)
	if err != nil {
		return nil, fmt.Errorf("admission: read the room of %d slots: %w", len(wakes), err)
	}
	type roomy struct {
		wake Wake
		room int
		turn turn
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (roomy, error) {
		var o roomy
		return o, r.Scan(&o.wake.Slot, &o.wake.WokenAt, &o.room, &o.turn.group, &o.turn.used)
	})
	if err != nil {
		return nil, err
	}
	var offers []Offer
	for _, o := range found {
		q := queue{tx: tx, slot: o.wake.Slot, turn: o.turn, picked: []string{}}
		ids, err := q.pick(ctx, min(o.room, max))
		if err != nil {
			return nil, err
		}
		offers = append(offers, Offer{Wake: o.wake, RunIDs: ids})
	}
	return offers, nil
}

// roomsSQL reads the room of each slot $1[i], woken at $2[i]: the limit
// its queue's head evaluated less its holders, and its turn. In the same
// statement it forgets the turns of the queues without a waiter, and
// deletes the wakes of the slots without room or without a waiter (the
// next run to leave such a slot wakes it again); it returns the others.
const roomsSQL = `
	WITH room AS (
	    SELECT s.slot, s.at,
	           (SELECT key_limit FROM engine_runs WHERE key_slot = s.slot
	            ORDER BY priority DESC, key_group, approved_at, run_id LIMIT 1) AS lim,
	           (SELECT count(*) FROM engine_run_keys WHERE slot = s.slot) AS held
	    FROM unnest($1::text[], $2::timestamptz[]) AS s(slot, at)),
	forget AS (DELETE FROM engine_key_turns t USING room WHERE t.slot = room.slot AND room.lim IS NULL),
	idle AS (DELETE FROM engine_key_wakes w USING room
	         WHERE w.slot = room.slot AND w.woken_at <= room.at AND (room.lim IS NULL OR room.lim <= room.held))
	SELECT room.slot, room.at, room.lim - room.held, coalesce(t.key_group, ''), coalesce(t.used, 0)
	FROM room LEFT JOIN engine_key_turns t ON t.slot = room.slot
	WHERE room.lim > room.held`

// turn is where a queue is in its visits: the group it visits and how
// many of its runs the visit started.
type turn struct {
	group string
	used  int
}

// queue picks the next waiters of a slot whose lock its transaction
// holds.
type queue struct {
	tx     pgx.Tx
	slot   string
	turn   turn
	picked []string
}

// topOf is the top priority of slot $1's waiters, leaving out the runs
// of the array placeholder picked: the first of its queue's index that is
// not one of them.
func topOf(picked string) string {
	return `(SELECT priority FROM engine_runs WHERE key_slot = $1 AND run_id <> ALL(` + picked + `::uuid[]) ORDER BY priority DESC LIMIT 1)`
}

// headSQL is the head of slot $1's group $2 at the queue's top priority,
// leaving out the runs of $3: its weight and the priority. It has none
// when the group has no waiter of that priority.
var headSQL = `
	SELECT key_weight, priority FROM engine_runs
	WHERE key_slot = $1 AND priority = ` + topOf("$3") + ` AND key_group = $2 AND run_id <> ALL($3::uuid[])
	ORDER BY approved_at, run_id LIMIT 1`

// nextGroupSQL is the first group after $2 that has a waiter of slot $1
// at the queue's top priority, leaving out the runs of $3, and the
// priority; firstGroupSQL is the first group of all, leaving out the
// runs of $2.
var (
	nextGroupSQL = `
	SELECT key_group, priority FROM engine_runs
	WHERE key_slot = $1 AND priority = ` + topOf("$3") + ` AND key_group > $2 AND run_id <> ALL($3::uuid[])
	ORDER BY key_group LIMIT 1`
	firstGroupSQL = `
	SELECT key_group, priority FROM engine_runs
	WHERE key_slot = $1 AND priority = ` + topOf("$2") + ` AND run_id <> ALL($2::uuid[])
	ORDER BY key_group LIMIT 1`
)

// pick picks up to room waiters: the visit of the turn's group goes on
// while the group has waiters at the top priority and has started fewer
// than its head's weight; then the next group's visit begins, from the
// first group after the last. It records where it stopped.
func (q *queue) pick(ctx context.Context, room int) ([]string, error) {
	for len(q.picked) < room {
		var weight, priority int
		err := q.tx.QueryRow(ctx, headSQL, q.slot, q.turn.group, q.picked).Scan(&weight, &priority)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		if err == nil && q.turn.used < weight {
			n, err := q.take(ctx, priority, min(weight-q.turn.used, room-len(q.picked)))
			if err != nil || n == 0 {
				return q.picked, err
			}
			continue
		}
		next, priority, err := q.nextGroup(ctx)
		if err != nil || next == nil {
			return q.picked, q.save(ctx, err)
		}
		if *next == q.turn.group { // the only group: its visit takes all the room
			q.turn.used = 0
			if n, err := q.take(ctx, priority, room-len(q.picked)); err != nil || n == 0 {
				return q.picked, q.save(ctx, err)
			}
			continue
		}
		q.turn = turn{group: *next}
	}
	return q.picked, q.save(ctx, nil)
}

// nextGroup returns the group after the turn's, wrapping around, and its
// priority; nil when none has a waiter.
func (q *queue) nextGroup(ctx context.Context) (*string, int, error) {
	var g string
	var priority int
	err := q.tx.QueryRow(ctx, nextGroupSQL, q.slot, q.turn.group, q.picked).Scan(&g, &priority)
	if errors.Is(err, pgx.ErrNoRows) {
		err = q.tx.QueryRow(ctx, firstGroupSQL, q.slot, q.picked).Scan(&g, &priority)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, nil
	}
	return &g, priority, err
}

// take picks up to n waiters of the turn's group at priority, first come,
// first served, and returns how many.
func (q *queue) take(ctx context.Context, priority, n int) (int, error) {
	rows, err := q.tx.Query(ctx, `SELECT run_id::text FROM engine_runs
		WHERE key_slot = $1 AND priority = $2 AND key_group = $3 AND run_id <> ALL($4::uuid[])
		ORDER BY approved_at, run_id LIMIT $5`, q.slot, priority, q.turn.group, q.picked, n)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	q.picked = append(q.picked, ids...)
	q.turn.used += len(ids)
	return len(ids), err
}

// save records the queue's turn, unless err.
func (q *queue) save(ctx context.Context, err error) error {
	if err != nil || len(q.picked) == 0 {
		return err
	}
	_, err = q.tx.Exec(ctx, `UPDATE engine_key_turns SET key_group = $2, used = $3 WHERE slot = $1`, q.slot, q.turn.group, q.turn.used)
	return err
}
