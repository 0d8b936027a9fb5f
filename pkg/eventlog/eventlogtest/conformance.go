// Package eventlogtest is the conformance suite of the event log: the
// state-store contract (uniqueness, gap-free monotonic runSeq, idempotent
// appends, compare-and-swap, watermark fetch, append-only, retention) and
// the Postgres specifics (partitions, database-side enforcement), written
// once and run against any database carrying the Weft schema.
package eventlogtest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
)

// Log is one test's event log: the implementation under test, which the
// suite reaches only through the eventlog.Log interface (and a journal
// over it, the write path), and the pool of the database it writes, which
// the suite uses for raw SQL (to prove the database itself refuses what
// the contract forbids) and for the transactions it writes in.
type Log struct {
	Store eventlog.Log
	Pool  *pgxpool.Pool
	// Limited returns the implementation over the same database with
	// each event's eventData bounded to n bytes, inclusive
	// (eventlog.WithMaxEventDataBytes for a Store).
	Limited func(n int) eventlog.Log
}

// append appends evs, all of one run, through the write path (Append: a
// journal.Write) on db, with a compare-and-swap on head when it is not
// nil.
func (l Log) append(ctx context.Context, db DB, head *int64, evs ...events.Event) ([]eventlog.AppendResult, error) {
	return Append(ctx, journal.New(l.Store), db, head, evs...)
}

// appendOne is append of one event.
func (l Log) appendOne(ctx context.Context, db DB, head *int64, ev events.Event) (eventlog.AppendResult, error) {
	res, err := l.append(ctx, db, head, ev)
	if err != nil {
		return eventlog.AppendResult{}, err
	}
	return res[0], nil
}

// appendMany is append of many parts in one Write (AppendMany).
func (l Log) appendMany(ctx context.Context, db DB, parts []eventlog.RunAppend) ([][]eventlog.AppendResult, error) {
	return AppendMany(ctx, journal.New(l.Store), db, parts)
}

// expect returns a pointer to an expected head.
func expect(head int64) *int64 { return &head }

// RunConformance runs the whole suite as parallel subtests of t, against
// the eventlog.Log that newLog returns. newLog must return a Log over a
// fresh, migrated database of its own for each subtest (weftest.NewDB
// does), since subtests inspect whole tables.
func RunConformance(t *testing.T, newLog func(t *testing.T) Log) {
	cases := []struct {
		name string
		fn   func(t *testing.T, l Log)
	}{
		{"AppendAssignsGapFreeRunSeq", testAppendAssignsGapFreeRunSeq},
		{"DuplicateKeyReturnsExistingRunSeq", testDuplicateKeyReturnsExistingRunSeq},
		{"RoundTripsEveryField", testRoundTripsEveryField},
		{"FetchAfterWatermark", testFetchAfterWatermark},
		{"CompareAndSwap", testCompareAndSwap},
		{"BatchAppend", testBatchAppend},
		{"BatchCompareAndSwapConflict", testBatchCompareAndSwapConflict},
		{"AppendManyAcrossRuns", testAppendManyAcrossRuns},
		{"RollbackLeavesNoGap", testRollbackLeavesNoGap},
		{"ValidationPersistsNothing", testValidationPersistsNothing},
		{"EventDataLimit", testEventDataLimit},
		{"DatabaseEnforcesRunSeqAndKeyUniqueness", testDatabaseEnforcesRunSeqAndKeyUniqueness},
		{"EventIDUniqueAcrossRunsAndPartitions", testEventIDUniqueAcrossRunsAndPartitions},
		{"AppendOnly", testAppendOnly},
		{"RunDeleteRemovesWholeRun", testRunDeleteRemovesWholeRun},
		{"ConcurrentAppendsOneRun", testConcurrentAppendsOneRun},
		{"ConcurrentAppendsManyRuns", testConcurrentAppendsManyRuns},
		{"DefaultAndMonthlyPartitions", testDefaultAndMonthlyPartitions},
		{"PartitionsEnsureIdempotentAndConcurrent", testPartitionsEnsureIdempotentAndConcurrent},
		{"PartitionsEnsureMovesDefaultRows", testPartitionsEnsureMovesDefaultRows},
		{"PartitionsEnsureDuringAppends", testPartitionsEnsureDuringAppends},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newLog(t))
		})
	}
}

// key returns a test idempotency key: the SHA-256 of s in lowercase hex.
func key(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// runIDAt returns a fresh UUIDv7 run id whose timestamp is at, so it lands
// in the partition of at's month (or the default partition).
func runIDAt(t *testing.T, at time.Time) string {
	t.Helper()
	id := uuid.Must(uuid.NewRandom())
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(at.UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = (id[6] & 0x0f) | 0x70
	return id.String()
}

// sibling returns a different run id with runID's leading 48 bits: a run
// created in the same millisecond.
func sibling(t *testing.T, runID string) string {
	t.Helper()
	run := uuid.MustParse(runID)
	id := uuid.Must(uuid.NewRandom())
	copy(id[:7], run[:7])
	return id.String()
}

// event returns a valid event of runID named name: its key is derived from
// runID and name, so the same name is a duplicate in the same run.
func event(t *testing.T, runID, name string) events.Event {
	t.Helper()
	ev, err := newEvent(runID, name)
	require.NoError(t, err)
	return ev
}

// newEvent is event for goroutines other than the test's.
func newEvent(runID, name string) (events.Event, error) {
	id, err := events.NewEventID(runID)
	if err != nil {
		return events.Event{}, err
	}
	data, err := json.Marshal(map[string]string{"name": name})
	return events.Event{
		SchemaVersion:    events.SchemaVersion,
		RunID:            runID,
		EventID:          id,
		StepID:           name,
		LogicalAttemptID: "1",
		EventType:        events.StepCompleted,
		EventData:        data,
		IdempotencyKey:   key(runID + "|" + name),
		EmittedAt:        time.Now().UTC().Truncate(time.Microsecond),
	}, err
}

// requireRun checks the run's whole history: runSeq exactly 1..n, and the
// head at n. It returns the events.
func requireRun(t *testing.T, l Log, runID string, n int) []events.Event {
	t.Helper()
	evs, err := l.Store.EventsFetchAfter(t.Context(), runID, 0, n+1)
	require.NoError(t, err)
	require.Len(t, evs, n)
	for i, ev := range evs {
		require.Equal(t, int64(i+1), ev.RunSeq, "runSeq of event %d of run %s", i, runID)
	}
	head, err := l.Store.RunHead(t.Context(), runID)
	require.NoError(t, err)
	require.Equal(t, int64(n), head)
	return evs
}

// begin starts a transaction that is rolled back when the test ends unless
// it was committed, so a failed assertion never leaves a connection busy.
func begin(t *testing.T, l Log) pgx.Tx {
	t.Helper()
	tx, err := l.Pool.Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// requireCode checks that err is a Postgres error with the given SQLSTATE.
func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "want SQLSTATE %s", code)
	require.Equal(t, code, pgErr.Code, "error: %v", err)
}

// countEvents returns how many rows of run_events belong to runID.
func countEvents(t *testing.T, l Log, runID string) int {
	t.Helper()
	var n int
	require.NoError(t, l.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM run_events WHERE run_id = $1`, runID).Scan(&n))
	return n
}

// partitionOf returns the partitions holding runID's events.
func partitionOf(t *testing.T, l Log, runID string) []string {
	t.Helper()
	rows, err := l.Pool.Query(t.Context(),
		`SELECT DISTINCT tableoid::regclass::text FROM run_events WHERE run_id = $1`, runID)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// monthPartition is the name of the monthly partition holding at.
func monthPartition(at time.Time) string { return "run_events_" + at.UTC().Format("200601") }
