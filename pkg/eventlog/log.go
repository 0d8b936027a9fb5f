package eventlog

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/events"
)

// Appender queues appends on a caller's batch, to be sent in one round
// trip with the caller's other statements (EventsAppendManyBatch,
// EventsAppendNewBatch, documented on Store): what a journal writes
// through (pkg/journal). Implementations validate every event before they
// queue anything, and are safe for concurrent use.
type Appender interface {
	EventsAppendManyBatch(b *pgx.Batch, parts []RunAppend) ([][]AppendResult, error)
	EventsAppendNewBatch(b *pgx.Batch, parts []RunAppend) ([][]AppendResult, error)
}

// Log is the event log's seam: the appends a journal queues and the
// reads, heads, deletions and partitions of the state-store contract, each
// with the contract Store documents. The conformance suite
// (pkg/eventlog/eventlogtest) checks an implementation through it alone;
// *Store is the Postgres one.
type Log interface {
	Appender
	EventsFetchAfter(ctx context.Context, runID string, afterSeq int64, limit int) ([]events.Event, error)
	EventsFetchAfterTx(ctx context.Context, q Querier, runID string, afterSeq int64, limit int) ([]events.Event, error)
	EventsFetchRunsTx(ctx context.Context, q Querier, runIDs []string) (map[string][]events.Event, error)
	RunHead(ctx context.Context, runID string) (int64, error)
	RunHeadTx(ctx context.Context, q Querier, runID string) (int64, error)
	RunDelete(ctx context.Context, runID string) error
	RunDeleteTx(ctx context.Context, q Querier, runID string) error
	PartitionsEnsure(ctx context.Context, from time.Time, months int) error
}

var _ Log = (*Store)(nil)
