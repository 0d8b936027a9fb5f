package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultFetchLimit is how many events EventsFetchAfter returns when the
// caller passes a limit of zero or less (state-store contract §1).
const DefaultFetchLimit = 1000

var (
	// ErrConflict reports that a compare-and-swap on a run's head failed:
	// the head was not the expected one. The transaction is aborted and
	// wrote nothing. The error is a *ConflictError carrying the head.
	ErrConflict = errors.New("eventlog: run head changed (compare-and-swap conflict)")
	// ErrInvalidEvent reports an event refused before anything was written.
	ErrInvalidEvent = errors.New("eventlog: invalid event")
	// ErrInvalidRunID reports a run id that is not a canonical lowercase
	// UUID. On append it comes together with ErrInvalidEvent.
	ErrInvalidRunID = errors.New("eventlog: invalid run id")
	// ErrDuplicateEventID reports an event whose eventId is already in the
	// log under another idempotency key (in this run or another one). The
	// transaction is aborted and wrote nothing.
	ErrDuplicateEventID = errors.New("eventlog: event id already in the log")
)

// ConflictError is the error of a failed compare-and-swap. errors.Is(err,
// ErrConflict) holds for it.
type ConflictError struct {
	RunID    string
	Expected int64 // the head the caller expected
	Head     int64 // the head the log had
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("eventlog: run %s head is %d, expected %d (compare-and-swap conflict)", e.RunID, e.Head, e.Expected)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// AppendResult is the outcome of appending one event (state-store contract
// §1, AppendResult).
type AppendResult struct {
	// RunSeq is the event's position in its run: newly assigned, or, for a
	// duplicate idempotency key, the runSeq of the event already stored.
	RunSeq int64 `json:"runSeq"`
	// Idempotent is true when the key was already in the log and nothing
	// was written. It is always !Persisted.
	Idempotent bool `json:"idempotent"`
	// Persisted is true when this call wrote the event.
	Persisted bool `json:"persisted"`
	// PersistedAt is when the stored event was written (for a duplicate,
	// when the original was), on the database clock, in UTC.
	PersistedAt time.Time `json:"persistedAt,omitzero"`
}

// Querier is what the read methods need: a pool, a connection or a pgx.Tx.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DefaultMaxEventDataBytes bounds an event's eventData unless
// WithMaxEventDataBytes says otherwise: room for the largest plan (pkg/plan,
// 1 MiB) in a RunApproved, with its input. Outputs and errors are far
// smaller; large results travel as ArtifactRef pointers.
const DefaultMaxEventDataBytes = 2 << 20

// Store is the Postgres event log. It is safe for concurrent use.
type Store struct {
	pool         *pgxpool.Pool
	maxEventData int
}

// Option configures a Store.
type Option func(*Store)

// WithMaxEventDataBytes bounds each event's eventData, inclusive; a larger
// one is refused with ErrInvalidEvent before anything is written. Zero or
// less means DefaultMaxEventDataBytes.
func WithMaxEventDataBytes(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxEventData = n
		}
	}
}

// New returns a Store over pool, whose database has the Weft schema
// (pkg/schema).
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{pool: pool, maxEventData: DefaultMaxEventDataBytes}
	for _, o := range opts {
		o(s)
	}
	return s
}

// RunHead returns the run's highest runSeq, or 0 for a run with no events.
func (s *Store) RunHead(ctx context.Context, runID string) (int64, error) {
	return s.RunHeadTx(ctx, s.pool, runID)
}

// RunHeadTx is RunHead through q, typically the caller's transaction. It
// takes no lock: append with the head as the expected one
// (RunAppend.ExpectedHead) to act on the value safely.
func (s *Store) RunHeadTx(ctx context.Context, q Querier, runID string) (int64, error) {
	if err := checkRunID(runID); err != nil {
		return 0, err
	}
	var head int64
	err := q.QueryRow(ctx, `SELECT head_seq FROM run_heads WHERE run_id = $1`, runID).Scan(&head)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("eventlog: head of run %s: %w", runID, err)
	}
	return head, nil
}

// RunDelete deletes every event of the run and its head, for retention of
// completed runs; it is the only way events leave the log row by row. A
// later append to the same run id starts again at runSeq 1. Deleting an
// unknown run is not an error.
func (s *Store) RunDelete(ctx context.Context, runID string) error {
	return s.RunDeleteTx(ctx, s.pool, runID)
}

// RunDeleteTx is RunDelete through q, typically the caller's transaction,
// so the deletion commits with the caller's own records (an archive row,
// say). It holds the run head's row lock until q's transaction ends.
func (s *Store) RunDeleteTx(ctx context.Context, q Querier, runID string) error {
	if err := checkRunID(runID); err != nil {
		return err
	}
	if _, err := q.Exec(ctx, `SELECT weft_run_delete($1)`, runID); err != nil {
		return fmt.Errorf("eventlog: delete run %s: %w", runID, err)
	}
	return nil
}

// PartitionsEnsure creates the missing monthly partitions of run_events for
// months months starting with the month (UTC) that holds from. Events of
// those months already in the default partition move into the new
// partition. Idempotent and safe to call concurrently; it briefly blocks
// appends while it creates a partition, so call it ahead of time (for
// example daily, for the next few months).
func (s *Store) PartitionsEnsure(ctx context.Context, from time.Time, months int) error {
	if months < 1 {
		return fmt.Errorf("eventlog: ensure partitions: months must be at least 1, got %d", months)
	}
	from = from.UTC()
	month := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.pool.Exec(ctx, `SELECT weft_event_partitions_ensure($1::date, $2)`,
		month.Format(time.DateOnly), months); err != nil {
		return fmt.Errorf("eventlog: ensure %d partitions from %s: %w", months, month.Format("2006-01"), err)
	}
	return nil
}

// mapError turns the database's refusals into the package's sentinels.
func mapError(runID string, expected *int64, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch {
	case pgErr.Code == "WE409" && expected != nil:
		head, _ := strconv.ParseInt(pgErr.Detail, 10, 64)
		return &ConflictError{RunID: runID, Expected: *expected, Head: head}
	case pgErr.Code == "23505" && isEventIDIndex(pgErr.ConstraintName):
		return fmt.Errorf("%w: %s", ErrDuplicateEventID, pgErr.Message)
	}
	return err
}

// isEventIDIndex reports whether name is a partition's unique event_id
// index (named <partition>_event_id by weft_event_partition_prepare).
func isEventIDIndex(name string) bool {
	return strings.HasSuffix(name, "_event_id")
}
