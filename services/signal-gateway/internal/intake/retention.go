package intake

import (
	"context"
	"fmt"
)

// expiredDeletes remove one batch of expired records of each kind; $1 is
// now, $2 the batch size.
var expiredDeletes = []struct{ table, query string }{
	{"signal_acceptances", `DELETE FROM signal_acceptances WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM signal_acceptances WHERE expires_at <= $1 LIMIT $2))`},
	{"run_requests", `DELETE FROM run_requests WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM run_requests WHERE expires_at <= $1 LIMIT $2))`},
}

// ExpiredDelete removes the acceptance and run-request records whose
// retention has passed, batch rows per statement, until none is left, and
// returns how many it removed. After it a repeat of an expired signal or
// start is a new request (tier0 contract, "After retention expiry"). Safe
// to run from any number of gateways at once.
func (in *Intake) ExpiredDelete(ctx context.Context, batch int) (int64, error) {
	batch = max(batch, 1)
	var total int64
	for _, d := range expiredDeletes {
		for {
			tag, err := in.pool.Exec(ctx, d.query, in.now(), batch)
			if err != nil {
				return total, fmt.Errorf("intake: delete expired %s: %w", d.table, err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < int64(batch) {
				break
			}
		}
	}
	return total, nil
}
