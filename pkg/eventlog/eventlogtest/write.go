package eventlogtest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
)

// DB is where Append writes: a *pgxpool.Pool, a pgx.Tx, or anything else
// that begins a transaction (a *pgx.Conn).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Append appends evs, all of one run, with a compare-and-swap on the
// run's head when expectedHead is not nil, and enqueues their bus copies,
// through one journal.Write on db, the one write path every writer of
// events takes: in a transaction of its own on a pool (journal.Journal.Run),
// inside the caller's transaction on a pgx.Tx (journal.Journal.Begin), in
// a transaction db.Begin begins, and Append commits, otherwise. It returns
// one result per event. It is the test form of the write path, for tests
// that need events in the log and nothing else of a writer.
func Append(ctx context.Context, j *journal.Journal, db DB, expectedHead *int64, evs ...events.Event) ([]eventlog.AppendResult, error) {
	res, err := AppendMany(ctx, j, db, []eventlog.RunAppend{{ExpectedHead: expectedHead, Events: evs}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// AppendMany is Append for many parts, of one run or several, each with
// its own compare-and-swap, all sent in one round trip of one Write. It
// returns the results part by part.
func AppendMany(ctx context.Context, j *journal.Journal, db DB, parts []eventlog.RunAppend) ([][]eventlog.AppendResult, error) {
	var out [][]eventlog.AppendResult
	write := func(w *journal.Write) error {
		var err error
		out, err = appendParts(ctx, w, parts)
		return err
	}
	switch db := db.(type) {
	case *pgxpool.Pool:
		return out, j.Run(ctx, db, write)
	case pgx.Tx:
		return out, write(j.Begin(db))
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("eventlogtest: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := write(j.Begin(tx)); err != nil {
		return nil, err
	}
	return out, tx.Commit(ctx)
}

// appendParts appends parts on w and commits it.
func appendParts(ctx context.Context, w *journal.Write, parts []eventlog.RunAppend) ([][]eventlog.AppendResult, error) {
	appended := make([]*journal.Appended, len(parts))
	for p, part := range parts {
		var err error
		if appended[p], err = w.Append(ctx, part.ExpectedHead, part.Events...); err != nil {
			return nil, err
		}
	}
	if err := w.Commit(ctx); err != nil {
		return nil, err
	}
	out := make([][]eventlog.AppendResult, len(parts))
	for p, a := range appended {
		out[p] = a.Results()
	}
	return out, nil
}
