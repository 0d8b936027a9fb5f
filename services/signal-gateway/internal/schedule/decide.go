package schedule

import (
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// Fire is one run a schedule starts: the fire time it stands for, and for
// a compressed run the window of fire times it covers.
type Fire struct {
	ScheduledFor time.Time
	Window       *api.FireWindow
}

// Action is one thing a decision does, in order.
type Action struct {
	// CancelPrevious asks for a CANCEL signal to the schedule's last run
	// (cancel-previous) before Fire starts.
	CancelPrevious bool
	Fire           Fire
}

// State is what a decision needs to know of a schedule beyond its
// definition.
type State struct {
	// NextFireAt is the earliest fire time not yet handled; zero when the
	// expression has none left.
	NextFireAt time.Time
	// Buffered is buffer-one's pending fire, or nil.
	Buffered *Fire
	// PrevActive says whether the last run the schedule started has not
	// ended (it is in engine_runs).
	PrevActive bool
}

// Policy is a schedule's definition as decisions use it.
type Policy struct {
	Cron       Cron
	Misfire    string // api.Misfire…
	MaxCatchup int
	Overlap    string // api.Overlap…
	// Grace is how late a fire time may be handled and still count as on
	// time; an older one is missed, and the misfire policy applies.
	Grace time.Duration
	// MaxScan bounds the due fire times one decision looks at; the rest
	// of a longer downtime is skipped as missed without being counted.
	MaxScan int
}

// Decision is what a schedule does now: the runs to start, in order, the
// fire times it skips, and its state afterwards.
type Decision struct {
	Actions    []Action
	Skips      []api.SkippedFires // RecordedAt left zero
	Buffered   *Fire
	NextFireAt time.Time
}

// Decide decides what a schedule does at now. It is a pure function:
// the runs it starts count as active for the fires after them, so an
// overlap policy applies between the fires of one decision too.
//
// A buffered fire whose previous run has ended starts first. Then every
// fire time from NextFireAt to now is due; those older than Grace are
// missed and handled by the misfire policy (skip drops them, catchup keeps
// the newest MaxCatchup, compress folds every due fire time into one run
// with its window); each remaining fire then meets the overlap policy.
// NextFireAt becomes the first fire time after now.
func Decide(s State, p Policy, now time.Time) Decision {
	d := Decision{NextFireAt: s.NextFireAt, Buffered: s.Buffered}
	active := s.PrevActive
	if d.Buffered != nil && !active {
		d.Actions = append(d.Actions, Action{Fire: *d.Buffered})
		d.Buffered, active = nil, true
	}
	due := scanDue(p, s.NextFireAt, now)
	if due.count() == 0 {
		return d
	}
	d.NextFireAt = due.next
	for _, f := range d.misfire(p, due) {
		active = d.overlap(p, f, active)
	}
	return d
}

// misfire turns the due fire times into fires, recording what it drops.
func (d *Decision) misfire(p Policy, due dueTimes) []Fire {
	var out []Fire
	switch {
	case due.missed == 0:
	case p.Misfire == api.MisfireCompress:
		newest := due.lastMissed
		if n := len(due.onTime); n > 0 {
			newest = due.onTime[n-1]
		}
		return []Fire{{ScheduledFor: newest, Window: &api.FireWindow{From: due.firstMissed, To: newest, MissedCount: due.missed}}}
	case p.Misfire == api.MisfireCatchup:
		kept := due.tail
		if cut := due.missed - len(kept); cut > 0 {
			d.skip(api.SkipCatchupLimit, due.firstMissed, due.lastCut, int64(cut))
		}
		for _, at := range kept {
			out = append(out, Fire{ScheduledFor: at})
		}
	default: // skip
		d.skip(api.SkipMisfire, due.firstMissed, due.lastMissed, int64(due.missed))
	}
	for _, at := range due.onTime {
		out = append(out, Fire{ScheduledFor: at})
	}
	return out
}

// overlap applies the overlap policy to f and says whether a run of the
// schedule is active afterwards.
func (d *Decision) overlap(p Policy, f Fire, active bool) bool {
	switch {
	case !active || p.Overlap == api.OverlapAllow:
		d.Actions = append(d.Actions, Action{Fire: f})
	case p.Overlap == api.OverlapCancelPrevious:
		d.Actions = append(d.Actions, Action{Fire: f, CancelPrevious: true})
	case p.Overlap == api.OverlapBufferOne && d.Buffered == nil:
		buffered := f
		d.Buffered = &buffered
	default: // skip, or buffer-one with its one fire held
		d.skip(api.SkipOverlap, f.ScheduledFor, f.ScheduledFor, 1)
	}
	return true
}

// skip records count fire times from..to skipped for reason, merged into
// the previous record when that is of the same reason.
func (d *Decision) skip(reason string, from, to time.Time, count int64) {
	if n := len(d.Skips); n > 0 && d.Skips[n-1].Reason == reason {
		d.Skips[n-1].To = to
		d.Skips[n-1].Count += count
		return
	}
	d.Skips = append(d.Skips, api.SkippedFires{Reason: reason, From: from, To: to, Count: count})
}

// dueTimes are the fire times from NextFireAt to now, summarised: the
// missed ones (older than the grace) by count, their first and last, the
// newest MaxCatchup of them and the last one older than those; the on-time
// ones in full (there are few: the grace is short).
type dueTimes struct {
	missed                  int
	firstMissed, lastMissed time.Time
	lastCut                 time.Time
	tail                    []time.Time // the newest MaxCatchup missed, oldest first
	onTime                  []time.Time
	next                    time.Time // the first fire time after now
}

func (t dueTimes) count() int { return t.missed + len(t.onTime) }

// scanDue walks the fire times from next (itself a fire time) to now.
func scanDue(p Policy, next, now time.Time) dueTimes {
	var due dueTimes
	keep := max(p.MaxCatchup, 1)
	at := next
	for n := 0; !at.IsZero() && !at.After(now); n++ {
		if p.MaxScan > 0 && n >= p.MaxScan {
			at = p.Cron.Next(now) // give up counting a very long downtime
			break
		}
		if now.Sub(at) <= p.Grace {
			due.onTime = append(due.onTime, at)
		} else {
			due.addMissed(at, keep)
		}
		at = p.Cron.Next(at)
	}
	due.next = at
	return due
}

// addMissed counts a missed fire time, keeping the newest keep of them.
func (t *dueTimes) addMissed(at time.Time, keep int) {
	if t.missed == 0 {
		t.firstMissed = at
	}
	t.missed++
	t.lastMissed = at
	if len(t.tail) == keep {
		t.lastCut = t.tail[0]
		t.tail = append(t.tail[:0], t.tail[1:]...)
	}
	t.tail = append(t.tail, at)
}
