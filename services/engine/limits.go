package engine

import (
	"errors"
	"fmt"
	"time"
)

// Limits of the sweep's timings (docs/engine.md, "Sweeps"): Validate and
// New refuse a value outside them. Zero means the field's default.
//
// Below the minimums the sweep would mostly re-drive runs that are only
// busy (each re-drive is a round); above the maximums a lost message could
// hold a run for more than a day.
const (
	MinSweepInterval = 10 * time.Millisecond
	MaxSweepInterval = time.Hour
	MinStallAfter    = 100 * time.Millisecond
	MaxStallAfter    = 24 * time.Hour
	MinTaskGrace     = 100 * time.Millisecond
	MaxTaskGrace     = 24 * time.Hour
	// MaxPartitionLease bounds Config.PartitionLease above: a killed
	// engine's runs wait about a lease. MinPartitionLease is in
	// partitions.go.
	MaxPartitionLease = 5 * time.Minute
	// MaxRoundLinger bounds Config.RoundLinger: it delays each round by up
	// to that much.
	MaxRoundLinger = 50 * time.Millisecond
)

// LimitError reports a Config duration outside its limits.
type LimitError struct {
	// Field is the Config field: "SweepInterval", "StallAfter",
	// "TaskGrace", "PartitionLease" or "RoundLinger".
	Field string
	// Value is the value given; Min and Max are the limits, inclusive, and
	// Default what zero means.
	Value, Min, Max, Default time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("engine: %s %s is outside its limits: at least %s, at most %s (0 means the default, %s)",
		e.Field, e.Value, e.Min, e.Max, e.Default)
}

// Validate reports every duration of c outside its limits, each as a
// *LimitError (errors.As finds the first). A zero field is valid: it means
// the default; so is a negative RoundLinger, which turns the linger off.
func (c Config) Validate() error {
	var errs []error
	for _, l := range []LimitError{
		{Field: "SweepInterval", Value: c.SweepInterval, Min: MinSweepInterval, Max: MaxSweepInterval, Default: DefaultSweepInterval},
		{Field: "StallAfter", Value: c.StallAfter, Min: MinStallAfter, Max: MaxStallAfter, Default: DefaultStallAfter},
		{Field: "TaskGrace", Value: c.TaskGrace, Min: MinTaskGrace, Max: MaxTaskGrace, Default: DefaultTaskGrace},
		{Field: "PartitionLease", Value: c.PartitionLease, Min: MinPartitionLease, Max: MaxPartitionLease, Default: DefaultPartitionLease},
	} {
		if l.Value != 0 && (l.Value < l.Min || l.Value > l.Max) {
			errs = append(errs, &l)
		}
	}
	if c.RoundLinger > MaxRoundLinger {
		errs = append(errs, &LimitError{Field: "RoundLinger", Value: c.RoundLinger, Max: MaxRoundLinger, Default: DefaultRoundLinger})
	}
	return errors.Join(errs...)
}
