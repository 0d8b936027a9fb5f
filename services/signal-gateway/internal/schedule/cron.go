package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // zones do not depend on the host's tz database

	"github.com/robfig/cron/v3"

	"github.com/weftrun/weft/pkg/api"
)

// Errors of ParseCron, wrapped with the reason.
var (
	ErrInvalidCron     = errors.New("invalid cron expression")
	ErrInvalidTimezone = errors.New("invalid timezone")
)

// parser reads five-field expressions: minute hour day-of-month month
// day-of-week, no seconds, no descriptors (@daily) and no CRON_TZ= prefix
// (the timezone is a field of its own).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// maxStepsPerNext bounds the wall-clock times Next looks at: more than a
// fall-back's repeated hour of minutes, far fewer than could loop.
const maxStepsPerNext = 4096

// Cron is a cron expression in a timezone, with Weft's DST rules
// (docs/schedules.md, "Daylight saving time"):
//
//   - every local wall-clock time that matches the expression fires
//     exactly once;
//   - a matching time that a spring-forward skips (02:30 when clocks jump
//     from 02:00 to 03:00) fires once, at the instant of the jump;
//   - a matching time that a fall-back repeats (01:30 when clocks fall
//     from 02:00 to 01:00) fires once, at its first occurrence;
//   - matching times that fall on one instant fire once.
//
// So "30 2 * * *" fires once on both transition days, "0 * * * *" fires
// 23 times on the spring-forward day and 24 on the fall-back day. The
// zero Cron never fires.
type Cron struct {
	spec *cron.SpecSchedule // evaluated on wall-clock times written in UTC
	loc  *time.Location
}

// ParseCron parses expr in the IANA zone timezone. The errors wrap
// ErrInvalidCron or ErrInvalidTimezone.
func ParseCron(expr, timezone string) (Cron, error) {
	loc, err := loadZone(timezone)
	if err != nil {
		return Cron{}, err
	}
	if len(expr) > api.MaxCronBytes {
		return Cron{}, fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrInvalidCron, len(expr), api.MaxCronBytes)
	}
	if len(strings.Fields(expr)) != 5 {
		return Cron{}, fmt.Errorf("%w: %q: want five fields: minute hour day-of-month month day-of-week", ErrInvalidCron, expr)
	}
	if strings.Contains(expr, "=") {
		return Cron{}, fmt.Errorf("%w: %q: set the timezone in its own field, not in the expression", ErrInvalidCron, expr)
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return Cron{}, fmt.Errorf("%w: %q: %w", ErrInvalidCron, expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return Cron{}, fmt.Errorf("%w: %q is not a five-field expression", ErrInvalidCron, expr)
	}
	spec.Location = time.UTC
	return Cron{spec: spec, loc: loc}, nil
}

// loadZone loads an IANA zone. "Local" and "" are refused: a schedule
// must not change with the host it runs on.
func loadZone(name string) (*time.Location, error) {
	switch {
	case name == "":
		return nil, fmt.Errorf("%w: empty", ErrInvalidTimezone)
	case name == "Local":
		return nil, fmt.Errorf("%w: %q depends on the host; name an IANA zone such as UTC or Europe/Paris", ErrInvalidTimezone, name)
	case len(name) > api.MaxTimezoneBytes:
		return nil, fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrInvalidTimezone, len(name), api.MaxTimezoneBytes)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not an IANA zone name: %w", ErrInvalidTimezone, name, err)
	}
	return loc, nil
}

// Next returns the first fire time strictly after t, in UTC, or the zero
// time when there is none within five years (robfig/cron's horizon).
func (c Cron) Next(t time.Time) time.Time {
	if c.spec == nil {
		return time.Time{}
	}
	wall := wallOf(t.In(c.loc))
	for range maxStepsPerNext {
		wall = c.spec.Next(wall)
		if wall.IsZero() {
			return time.Time{}
		}
		if at := c.instant(wall); at.After(t) {
			return at.UTC()
		}
	}
	return time.Time{}
}

// wallOf writes t's wall-clock reading in UTC, where no time repeats or
// is skipped.
func wallOf(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// instant maps a wall-clock reading to the instant it fires at: its first
// occurrence in the zone or, for a reading a transition skips, the
// transition itself.
func (c Cron) instant(wall time.Time) time.Time {
	guess := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, c.loc)
	start, end := guess.ZoneBounds()
	probes := []time.Time{guess}
	if !start.IsZero() {
		probes = append(probes, start.Add(-time.Second)) // the zone before
	}
	if !end.IsZero() {
		probes = append(probes, end) // the zone after
	}
	var first time.Time
	for _, probe := range probes {
		_, offset := probe.Zone()
		at := wall.Add(-time.Duration(offset) * time.Second)
		if wallOf(at.In(c.loc)).Equal(wall) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	if !first.IsZero() {
		return first
	}
	for _, boundary := range []time.Time{start, end} {
		if boundary.IsZero() {
			continue
		}
		before, after := wallOf(boundary.Add(-time.Nanosecond).In(c.loc)), wallOf(boundary.In(c.loc))
		if !wall.Before(before) && wall.Before(after) {
			return boundary
		}
	}
	return guess
}
