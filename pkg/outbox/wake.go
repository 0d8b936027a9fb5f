package outbox

import (
	"context"
	"fmt"
)

// barrierWait bounds each wait of an arming relay for the writers that may
// have missed the arming (weft_outbox_barrier). A writer whose transaction
// stays open longer does not hold the relay up: the worker claims, then
// waits again, until the writer has committed or rolled back.
const barrierWaitMillis = 100

// setArmed records whether the worker's partitions wait for notifications,
// all of them in one statement, and their barriers in one more.
//
// Disarming tells writers that the relay is claiming and needs no NOTIFY,
// which spares their commits Postgres's database-wide notify lock, held
// through the commit's WAL flush.
//
// Arming tells writers to notify from now on. A writer that checked before
// the arming was visible holds the partition's shared wake lock until it
// commits; the barrier waits for all of them (new writers meanwhile notify
// without waiting), so the claim the worker makes after it sees their rows.
// Until the barrier has passed, the worker is not settled and must not
// sleep: it claims and tries the barrier again.
func (w *worker) setArmed(ctx context.Context, armed bool) error {
	if !w.armKnown || w.armed != armed {
		_, err := w.r.pool.Exec(ctx, `
			INSERT INTO outbox_wake (partition, armed) SELECT p, $2 FROM unnest($1::int[]) AS p
			ON CONFLICT (partition) DO UPDATE SET armed = EXCLUDED.armed`, w.partitions, armed)
		if err != nil {
			return fmt.Errorf("outbox: set partitions %v armed=%t: %w", w.partitions, armed, err)
		}
		w.armed, w.armKnown, w.settled = armed, true, false
	}
	if !armed || w.settled {
		return nil
	}
	// In a statement of its own, so the arming above is visible first.
	// Every barrier is tried (bool_and does not stop at the first false),
	// each bounded by barrierWaitMillis.
	err := w.r.pool.QueryRow(ctx, `SELECT bool_and(weft_outbox_barrier(p, $2)) FROM unnest($1::int[]) AS p`,
		w.partitions, barrierWaitMillis).Scan(&w.settled)
	if err != nil {
		return fmt.Errorf("outbox: arm partitions %v: wait for writers: %w", w.partitions, err)
	}
	return nil
}
