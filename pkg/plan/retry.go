package plan

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"time"
)

// Defaults of a RetryPolicy; see DefaultRetryPolicy.
const (
	DefaultMaxAttempts    = 3
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = time.Minute
	DefaultMultiplier     = 2.0
	DefaultJitter         = 0.2
)

// RetryPolicy says how often and how fast an activity step is retried after
// a failed attempt. Each retry is a new logical attempt.
//
// In JSON every field is optional: a field left out takes its default (see
// DefaultRetryPolicy), and a field given is taken literally, so "jitter": 0
// turns jitter off. A RetryPolicy built in Go is taken literally too; start
// from DefaultRetryPolicy. Parsed plans carry every field explicitly, so
// the persisted form does not depend on defaults.
type RetryPolicy struct {
	// MaxAttempts counts all attempts, the first included; 1 means no
	// retries. At least 1.
	MaxAttempts int `json:"maxAttempts"`
	// InitialBackoff is the delay before the first retry. Not negative.
	InitialBackoff Duration `json:"initialBackoff"`
	// MaxBackoff caps every delay. Positive and at least InitialBackoff.
	MaxBackoff Duration `json:"maxBackoff"`
	// Multiplier scales the delay from one retry to the next. At least 1.
	Multiplier float64 `json:"multiplier"`
	// Jitter is the fraction, in [0, 1], by which a delay is randomly
	// shortened, so that retries of many runs spread out.
	Jitter float64 `json:"jitter"`
	// NonRetryableErrorCodes lists error codes that fail the step at once,
	// whatever attempts remain. Matched exactly.
	NonRetryableErrorCodes []string `json:"nonRetryableErrorCodes,omitempty"`
}

// DefaultRetryPolicy returns the policy of a step that sets none: 3
// attempts, backoff from 1s doubling up to 1m, jitter 0.2.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		MaxAttempts:    DefaultMaxAttempts,
		InitialBackoff: Duration(DefaultInitialBackoff),
		MaxBackoff:     Duration(DefaultMaxBackoff),
		Multiplier:     DefaultMultiplier,
		Jitter:         DefaultJitter,
	}
}

// UnmarshalJSON implements json.Unmarshaler: fields absent from b keep
// their defaults, fields present are taken literally, unknown fields are
// an error.
func (r *RetryPolicy) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	type plain RetryPolicy // no methods, so no recursion
	v := plain(DefaultRetryPolicy())
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	*r = RetryPolicy(v)
	return nil
}

// Backoff returns the delay before the retry that follows failed attempt
// number attempt (1 for the first attempt; smaller values count as 1):
// InitialBackoff × Multiplier^(attempt−1), capped at MaxBackoff, then
// shortened by up to Jitter of itself: delay × (1 − Jitter × rnd).
//
// rnd is the caller's random number in [0, 1) (values outside are clamped),
// so Backoff is pure: rnd 0 gives the delay without jitter. The result is
// never negative and never above MaxBackoff.
func (r RetryPolicy) Backoff(attempt int, rnd float64) time.Duration {
	attempt = max(attempt, 1)
	limit := max(r.MaxBackoff.Std(), 0)
	d := float64(max(r.InitialBackoff.Std(), 0)) * math.Pow(max(r.Multiplier, 1), float64(attempt-1))
	base := limit
	if d < float64(limit) { // false for NaN and +Inf
		base = time.Duration(d)
	}
	jitter := min(max(r.Jitter, 0), 1)
	rnd = min(max(rnd, 0), 1)
	if math.IsNaN(jitter) || math.IsNaN(rnd) {
		return base
	}
	cut := float64(base) * jitter * rnd
	if cut >= float64(base) {
		return 0
	}
	return base - time.Duration(cut)
}

// Retryable reports whether an attempt that failed with error code code may
// be retried, that is, whether code is not among NonRetryableErrorCodes.
// Whether attempts remain is the caller's check against MaxAttempts.
func (r RetryPolicy) Retryable(code string) bool {
	return !slices.Contains(r.NonRetryableErrorCodes, code)
}
