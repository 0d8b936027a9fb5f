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
	names := make([]string, len(wakes))
	for i, w := range wakes {
		names[i] = keyLockName(w.Slot)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(n)) FROM (SELECT n FROM unnest($1::text[]) n ORDER BY n) s`, names); err != nil {
		return nil, fmt.Errorf("admission: lock slots: %w", err)
	}
	var offers []Offer
	var idle []Wake
	for _, w := range wakes {
		ids, err := nextWaitersTx(ctx, tx, w.Slot, max)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			idle = append(idle, w)
			continue
		}
		offers = append(offers, Offer{Wake: w, RunIDs: ids})
	}
	return offers, DoneWakes(ctx, tx, idle)
}

// nextWaitersTx is the offer of one slot, whose lock the caller holds.
func nextWaitersTx(ctx context.Context, tx pgx.Tx, slot string, max int) ([]string, error) {
	var room int
	var turn *string
	err := tx.QueryRow(ctx, `
		SELECT coalesce((SELECT key_limit FROM engine_runs WHERE key_slot = $1
		                 ORDER BY priority DESC, key_group, approved_at, run_id LIMIT 1), 0)
		       - (SELECT count(*) FROM engine_run_keys WHERE slot = $1),
		       (SELECT key_group FROM engine_key_turns WHERE slot = $1)`, slot).Scan(&room, &turn)
	if err != nil || room <= 0 {
		return nil, err
	}
	room = min(room, max)
	if turn == nil {
		rows, err := tx.Query(ctx, `SELECT run_id::text FROM engine_runs WHERE key_slot = $1
			ORDER BY priority DESC, key_group, approved_at, run_id LIMIT $2`, slot, room)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[string])
	}
	return inTurnTx(ctx, tx, slot, *turn, room)
}

// nextInTurnSQL is the head of the next group after $2 (any group with
// $4) at the queue's top priority, leaving out the runs of $3.
const nextInTurnSQL = `
	WITH top AS (SELECT max(priority) AS p FROM engine_runs WHERE key_slot = $1 AND run_id <> ALL($3::uuid[]))
	SELECT run_id::text, key_group FROM engine_runs, top
	WHERE key_slot = $1 AND priority = top.p AND ($4 OR key_group > $2) AND run_id <> ALL($3::uuid[])
	ORDER BY key_group, approved_at, run_id LIMIT 1`

// inTurnTx picks room waiters of slot in turn across their groups, from
// the group after turn, and records the last group picked.
func inTurnTx(ctx context.Context, tx pgx.Tx, slot, turn string, room int) ([]string, error) {
	picked := []string{}
	for len(picked) < room {
		var id, group string
		err := tx.QueryRow(ctx, nextInTurnSQL, slot, turn, picked, false).Scan(&id, &group)
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, nextInTurnSQL, slot, turn, picked, true).Scan(&id, &group)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		picked, turn = append(picked, id), group
	}
	if len(picked) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE engine_key_turns SET key_group = $2 WHERE slot = $1`, slot, turn); err != nil {
			return nil, err
		}
	}
	return picked, nil
}
