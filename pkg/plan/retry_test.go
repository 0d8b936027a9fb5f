package plan

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	def := DefaultRetryPolicy()
	flat := RetryPolicy{MaxAttempts: 5, InitialBackoff: Duration(time.Second), MaxBackoff: Duration(time.Second), Multiplier: 1}
	huge := RetryPolicy{MaxAttempts: 5, InitialBackoff: Duration(time.Second), MaxBackoff: math.MaxInt64, Multiplier: 10}
	tests := []struct {
		name    string
		r       RetryPolicy
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{"first retry, no jitter drawn", def, 1, 0, time.Second},
		{"second doubles", def, 2, 0, 2 * time.Second},
		{"sixth", def, 6, 0, 32 * time.Second},
		{"capped at max", def, 7, 0, time.Minute},
		{"capped far out", def, 1000, 0, time.Minute},
		{"attempt below 1 counts as 1", def, 0, 0, time.Second},
		{"jitter shortens by jitter×rnd", def, 1, 0.5, 900 * time.Millisecond},
		{"jitter applies after the cap", def, 10, 0.5, 54 * time.Second},
		{"rnd just below 1", def, 1, 0.999999, 800000200 * time.Nanosecond},
		{"rnd above 1 clamps", def, 1, 7, 800 * time.Millisecond},
		{"negative rnd clamps", def, 1, -1, time.Second},
		{"NaN rnd ignored", def, 1, math.NaN(), time.Second},
		{"full jitter can reach zero", RetryPolicy{InitialBackoff: Duration(time.Second), MaxBackoff: Duration(time.Second), Multiplier: 1, Jitter: 1}, 1, 1, 0},
		{"multiplier 1 is constant", flat, 4, 0, time.Second},
		{"zero initial backoff", RetryPolicy{MaxBackoff: Duration(time.Second), Multiplier: 2}, 3, 0, 0},
		{"overflowing growth caps without wrapping", huge, 40, 0, math.MaxInt64},
		{"overflowing growth with jitter", RetryPolicy{InitialBackoff: Duration(time.Second), MaxBackoff: math.MaxInt64, Multiplier: 10, Jitter: 1}, 40, 0.5, math.MaxInt64 / 2},
		{"NaN multiplier caps", RetryPolicy{InitialBackoff: Duration(time.Second), MaxBackoff: Duration(time.Minute), Multiplier: math.NaN()}, 2, 0, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.r.Backoff(tt.attempt, tt.rnd)
			require.InDelta(t, float64(tt.want), float64(got), 1024, "got %v", got)
			require.GreaterOrEqual(t, got, time.Duration(0))
			require.LessOrEqual(t, got, tt.r.MaxBackoff.Std())
		})
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	r := RetryPolicy{NonRetryableErrorCodes: []string{"BAD_REQUEST", "NOT_FOUND"}}
	require.False(t, r.Retryable("BAD_REQUEST"))
	require.False(t, r.Retryable("NOT_FOUND"))
	require.True(t, r.Retryable("bad_request"), "codes match exactly")
	require.True(t, r.Retryable("TIMEOUT"))
	require.True(t, r.Retryable(""))
	require.True(t, DefaultRetryPolicy().Retryable("ANY"))
}

func TestRetryPolicyJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want RetryPolicy
	}{
		{"empty takes every default", `{}`, DefaultRetryPolicy()},
		{"given fields are literal", `{"maxAttempts":1,"jitter":0,"initialBackoff":"0s"}`,
			RetryPolicy{MaxAttempts: 1, MaxBackoff: Duration(DefaultMaxBackoff), Multiplier: DefaultMultiplier}},
		{"all fields", `{"maxAttempts":9,"initialBackoff":"2s","maxBackoff":"1h","multiplier":1.5,"jitter":0.5,"nonRetryableErrorCodes":["X"]}`,
			RetryPolicy{9, Duration(2 * time.Second), Duration(time.Hour), 1.5, 0.5, []string{"X"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got RetryPolicy
			require.NoError(t, json.Unmarshal([]byte(tt.in), &got))
			require.Equal(t, tt.want, got)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			var again RetryPolicy
			require.NoError(t, json.Unmarshal(b, &again))
			require.Equal(t, got, again)
		})
	}
	var r RetryPolicy
	require.Error(t, json.Unmarshal([]byte(`{"maxAttempt":3}`), &r), "unknown fields are rejected")
	b, err := json.Marshal(DefaultRetryPolicy())
	require.NoError(t, err)
	require.JSONEq(t, `{"maxAttempts":3,"initialBackoff":"1s","maxBackoff":"1m0s","multiplier":2,"jitter":0.2}`, string(b))
}

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		`"30s"`: 30 * time.Second, `"1m30s"`: 90 * time.Second, `"250ms"`: 250 * time.Millisecond,
		`"0s"`: 0, `"1.5h"`: 90 * time.Minute, `"-0s"`: 0,
	} {
		var d Duration
		require.NoError(t, json.Unmarshal([]byte(in), &d), in)
		require.Equal(t, want, d.Std(), in)
		b, err := json.Marshal(d)
		require.NoError(t, err)
		var again Duration
		require.NoError(t, json.Unmarshal(b, &again))
		require.Equal(t, d, again)
	}
	for _, in := range []string{`"-1s"`, `"soon"`, `30`, `""`, `"1"`, `true`, `{}`} {
		var d Duration
		err := json.Unmarshal([]byte(in), &d)
		require.Error(t, err, in)
		require.NotContains(t, err.Error(), "soon", "errors do not repeat the input")
	}
	d := Duration(42)
	require.NoError(t, json.Unmarshal([]byte(`null`), &d))
	require.Equal(t, Duration(42), d, "null leaves the value alone")
	require.Equal(t, "1m0s", Duration(time.Minute).String())
}
