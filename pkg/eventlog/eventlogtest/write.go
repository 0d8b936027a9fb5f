package eventlogtest

import (
	"context"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
)

// Append appends evs, all of one run, with a compare-and-swap on the
// run's head when expectedHead is not nil, and enqueues their bus copies,
// through one journal.Write on db, the one write path every writer of
// events takes (journal.Journal.Begin): in a transaction of its own on a
// pool, inside the caller's transaction otherwise. It returns one result
// per event. It is the test form of the write path, for tests that need
// events in the log and nothing else of a writer.
func Append(ctx context.Context, j *journal.Journal, db journal.DB, expectedHead *int64, evs ...events.Event) ([]eventlog.AppendResult, error) {
	res, err := AppendMany(ctx, j, db, []eventlog.RunAppend{{ExpectedHead: expectedHead, Events: evs}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// AppendMany is Append for many parts, of one run or several, each with
// its own compare-and-swap, all sent in one round trip of one Write. It
// returns the results part by part.
func AppendMany(ctx context.Context, j *journal.Journal, db journal.DB, parts []eventlog.RunAppend) ([][]eventlog.AppendResult, error) {
	w := j.Begin(db)
	defer func() { _ = w.Rollback(context.WithoutCancel(ctx)) }()
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
