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

// setArmed records whether the worker's partition waits for notifications.
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
			INSERT INTO outbox_wake (partition, armed) VALUES ($1, $2)
			ON CONFLICT (partition) DO UPDATE SET armed = EXCLUDED.armed`, w.partition, armed)
		if err != nil {
			return fmt.Errorf("outbox: set partition %d armed=%t: %w", w.partition, armed, err)
		}
		w.armed, w.armKnown, w.settled = armed, true, false
	}
	if !armed || w.settled {
		return nil
	}
	// In a statement of its own, so the arming above is visible first.
	err := w.r.pool.QueryRow(ctx, `SELECT weft_outbox_barrier($1, $2)`, w.partition, barrierWaitMillis).Scan(&w.settled)
	if err != nil {
		return fmt.Errorf("outbox: arm partition %d: wait for writers: %w", w.partition, err)
	}
	return nil
}
