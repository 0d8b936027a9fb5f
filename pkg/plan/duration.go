package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"
)

// Duration is a time.Duration that encodes in JSON as a Go duration string
// ("30s", "1m30s", "250ms"), as time.Duration.String writes it and
// time.ParseDuration reads it. Negative durations are rejected when
// decoding. JSON null decodes as no change, like a missing field.
type Duration time.Duration

// Errors from decoding a Duration. They do not repeat the input, which is
// user-supplied.
var (
	errNegativeDuration = errors.New("duration must not be negative")
	errDurationType     = errors.New(`must be a duration string such as "30s"`)
	errDurationObject   = errors.New(`must be a duration string such as "30s", not an object`)
	errDurationArray    = errors.New(`must be a duration string such as "30s", not an array`)
	errDurationSyntax   = errors.New(`duration must be a string such as "30s", "1m30s" or "250ms"`)
)

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String returns d in time.Duration's notation.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler. It accepts a JSON string that
// time.ParseDuration accepts and that is not negative.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return durationTypeError(b)
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// durationTypeError says what b, JSON that is not a string, should have
// been.
func durationTypeError(b []byte) error {
	switch b = bytes.TrimLeft(b, " \t\r\n"); {
	case bytes.HasPrefix(b, []byte("{")):
		return errDurationObject
	case bytes.HasPrefix(b, []byte("[")):
		return errDurationArray
	default:
		return errDurationType
	}
}

// parseDuration parses a non-negative Go duration string.
func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, errDurationSyntax
	}
	if v < 0 {
		return 0, errNegativeDuration
	}
	return v, nil
}
