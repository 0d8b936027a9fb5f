package projector

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// planStep is one node of a run's plan graph, as the read API shows it so
// that steps not yet started can be drawn.
type planStep struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind,omitempty"`
	Activity  string   `json:"activity,omitempty"`
	Signal    string   `json:"signal,omitempty"`
	DependsOn []string `json:"dependsOn"`
}

// runChange is what projecting one run in a batch did.
type runChange struct {
	changed   bool          // the row must be saved
	resynced  bool          // the run was read back from the log
	gapOpened bool          // the run became STALE
	gapClosed bool          // the run's gap closed
	persisted []time.Time   // persistedAt of each event applied, for its lag
	haltErr   error         // an event the reducer cannot read halted the run
	forged    []forgedEvent // bus events the log refutes: dropped (verify.go)
	// As of the end of the batch: the run's tenant, watermark and the
	// runSeq seen past its gap (0 when none is open).
	tenantID         string
	lastSeq, gapSeen int64
}

// project applies bus, the events of r's run this batch received (in
// runSeq order), to r, in strict runSeq order and never past a gap
// (execution-semantics §1.5, state-store contract §4.2):
//
//   - With no gap open and no event lagging past ResyncLag, the bus events
//     apply directly; duplicates (runSeq at or below the watermark) are
//     skipped by the reducer.
//   - On a gap, an open gap, or a lagging event, the run resyncs: its
//     events after the watermark are read from the log (the truth) in
//     pages and applied, then whatever of bus still fits.
//   - After a resync the log alone says whether a gap is open: it is open
//     (the run is STALE, and the resync loop retries) only where the log
//     itself has one. Bus events reach here verified (verifyBus), so every
//     one is in the log; a runSeq seen past a gap that a resync does not
//     find in the log (one a forged message left before verification) is
//     forgotten, and the gap closes.
//
// A nil bus (the resync loop's and the rebuild's call) always resyncs. An event the reducer
// cannot read halts the run the same way: it stays
// STALE at the event before, and the error is returned in haltErr.
func (s *Service) project(ctx context.Context, tx pgx.Tx, r *runRow, bus []events.Event, now time.Time) (runChange, error) {
	before, wasStale := r.snap.LastEventSeq, r.stale()
	seen := r.gapSeen
	for _, e := range bus {
		seen = max(seen, e.RunSeq)
	}
	var applied []events.Event
	apply := func(evs []events.Event) error {
		from := r.snap.LastEventSeq
		next, err := events.ProjectIncremental(r.snap, evs)
		r.snap = next
		applied = appendApplied(applied, evs, from, next.LastEventSeq)
		return err
	}
	var ch runChange
	resync := wasStale || bus == nil || s.lagging(bus, r.snap.LastEventSeq, now)
	if !resync {
		err := apply(bus)
		if _, gap := errors.AsType[*events.GapError](err); gap {
			resync = true
		} else if err != nil {
			ch.haltErr = err
		}
	}
	if resync {
		ch.resynced = true
		var err error
		var logTop int64
		if ch.haltErr, logTop, err = s.resync(ctx, tx, r, bus, apply); err != nil {
			return runChange{}, err
		}
		seen = logTop
	}
	if ch.haltErr != nil {
		seen = max(seen, r.snap.LastEventSeq+1)
	}
	s.absorb(r, applied, now, &ch)
	if rebuilding(ctx) { // a rebuild measures no lag and counts no resync
		ch.persisted, ch.resynced = nil, false
	}
	s.setGap(r, seen, now, &ch)
	ch.changed = ch.changed || r.snap.LastEventSeq != before || wasStale != r.stale()
	ch.gapOpened = !wasStale && r.stale()
	ch.gapClosed = wasStale && !r.stale()
	return ch, nil
}

// resync reads r's run from the log after the watermark, page by page, and
// applies it, then the bus events. It returns the reducer's error that
// halts the run, if any; logTop, the highest runSeq the log showed past the
// watermark (the watermark when none), which is past the new watermark only
// when the log itself has a gap; and an error only when the log cannot be
// read.
func (s *Service) resync(ctx context.Context, tx pgx.Tx, r *runRow, bus []events.Event, apply func([]events.Event) error) (halt error, logTop int64, err error) {
	logTop = r.snap.LastEventSeq
	for {
		page, err := s.log.EventsFetchAfterTx(ctx, tx, r.snap.RunID, r.snap.LastEventSeq, DefaultFetchPage)
		if err != nil {
			return nil, 0, err
		}
		if len(page) == 0 {
			break
		}
		logTop = max(logTop, page[len(page)-1].RunSeq)
		if err := apply(page); err != nil {
			if _, gap := errors.AsType[*events.GapError](err); gap {
				return nil, logTop, nil // the log itself has a gap: wait for it to close
			}
			return err, logTop, nil // the log itself cannot be applied past here
		}
		if len(page) < DefaultFetchPage {
			break
		}
	}
	if err := apply(bus); err != nil {
		if _, gap := errors.AsType[*events.GapError](err); !gap {
			return err, logTop, nil
		}
	}
	return nil, logTop, nil
}

// lagging reports whether any bus event past the watermark waited longer
// than ResyncLag. Events at or below it are duplicates: once a run has
// caught up from the log, the rest of the bus's backlog costs no read.
func (s *Service) lagging(bus []events.Event, watermark int64, now time.Time) bool {
	for _, e := range bus {
		if e.RunSeq > watermark && !e.PersistedAt.IsZero() && now.Sub(e.PersistedAt) > s.cfg.ResyncLag {
			return true
		}
	}
	return false
}

// absorb records what the applied events tell beyond the snapshot: the
// run's identity, plan, run request id and parent run from its
// RunApproved, and each event's persistedAt. The row's lag_ms is the last
// event's lag as of now (the batch's writes); the histogram measures to
// the commit (afterCommit).
func (s *Service) absorb(r *runRow, applied []events.Event, now time.Time, ch *runChange) {
	for _, e := range applied {
		if !e.PersistedAt.IsZero() {
			ch.persisted = append(ch.persisted, e.PersistedAt)
			r.lastPersisted, r.lagMs = e.PersistedAt, max(0, now.Sub(e.PersistedAt)).Milliseconds()
		}
		if e.EventType != events.RunApproved {
			continue
		}
		var d events.RunApprovedData
		if err := e.Data(&d); err != nil {
			continue // the reducer read it; a payload it ignores cannot hurt
		}
		r.ident = api.RunIdentity{TenantID: d.TenantID, ProjectID: d.ProjectID, EnvironmentID: d.EnvironmentID,
			PlanID: d.PlanID, PlanVersion: d.PlanVersion}
		r.requestID = &d.RunRequestID
		r.parentRunID = parentRunID(d.Parent)
		var planned int
		r.planSteps, planned = planGraph(d.Plan)
		r.stepsTotal = max(r.stepsTotal, planned)
		r.createdAt = cmp.Or(e.PersistedAt, e.EmittedAt)
		ch.changed = true
	}
}

// parentRunID is the run id of a child run's parent, canonical; nil for a
// run without a parent, or whose parent's id is not a UUID (the column is
// a uuid: such an id must not fail the batch's save).
func parentRunID(p *events.RunParent) *string {
	if p == nil {
		return nil
	}
	return canonicalRunID(p.RunID)
}

// canonicalRunID is runID in canonical form; nil when it is not a UUID.
func canonicalRunID(runID string) *string {
	id, err := uuid.Parse(runID)
	if err != nil {
		return nil
	}
	s := id.String()
	return &s
}

// setGap opens, keeps or closes r's gap: it is open while an event seen is
// past the watermark.
func (s *Service) setGap(r *runRow, seen int64, now time.Time, ch *runChange) {
	if seen <= r.snap.LastEventSeq {
		r.gapSeen, r.gapSince = 0, time.Time{}
		return
	}
	if r.gapSince.IsZero() {
		r.gapSince = now
	}
	if seen != r.gapSeen {
		ch.changed = true
	}
	r.gapSeen = seen
}

// appendApplied appends to dst the events of evs with runSeq in (from, to]:
// those the reducer just applied.
func appendApplied(dst, evs []events.Event, from, to int64) []events.Event {
	for _, e := range evs {
		if e.RunSeq > from && e.RunSeq <= to {
			dst = append(dst, e)
			from = e.RunSeq
		}
	}
	return dst
}

// planGraph extracts the steps' graph from a persisted plan and counts its
// steps; nil and 0 when the plan cannot be read.
func planGraph(raw json.RawMessage) (json.RawMessage, int) {
	var p struct {
		Steps []planStep `json:"steps"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil {
		return nil, 0
	}
	for i := range p.Steps {
		if p.Steps[i].DependsOn == nil {
			p.Steps[i].DependsOn = []string{}
		}
	}
	out, err := json.Marshal(p.Steps)
	if err != nil {
		return nil, 0
	}
	return out, len(p.Steps)
}
