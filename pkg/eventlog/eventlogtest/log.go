package eventlogtest

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
)

// BatchSender sends a batch: a pool, a connection or a transaction.
type BatchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// AppendLog appends evs, all of one run, with a compare-and-swap on the
// run's head when expectedHead is not nil, to the log alone, in one round
// trip on q (on a pool, a transaction of its own): no outbox row, so the
// bus never carries them. It is for tests of what happens to an event the
// bus lost; Append is the write path.
func AppendLog(ctx context.Context, log eventlog.Appender, q BatchSender, expectedHead *int64, evs ...events.Event) ([]eventlog.AppendResult, error) {
	b := &pgx.Batch{}
	res, err := log.EventsAppendManyBatch(b, []eventlog.RunAppend{{ExpectedHead: expectedHead, Events: evs}})
	if err != nil {
		return nil, err
	}
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return res[0], nil
}
