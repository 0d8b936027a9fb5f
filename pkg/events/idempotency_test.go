package events

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

type keyVector struct {
	Name             string `json:"name"`
	RunID            string `json:"runId"`
	StepID           string `json:"stepId"`
	LogicalAttemptID string `json:"logicalAttemptId"`
	EventType        string `json:"eventType"`
	PlanVersion      string `json:"planVersion"`
	PreimageHex      string `json:"preimageHex"`
	Key              string `json:"key"`
}

func (v keyVector) parts() []string {
	return []string{v.RunID, v.StepID, v.LogicalAttemptID, v.EventType, v.PlanVersion}
}

func loadKeyVectors(t *testing.T) []keyVector {
	t.Helper()
	raw, err := os.ReadFile("testdata/idempotency_vectors.json")
	require.NoError(t, err)
	var doc struct {
		Vectors []keyVector `json:"vectors"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.GreaterOrEqual(t, len(doc.Vectors), 10)
	return doc.Vectors
}

func TestIdempotencyKeyGoldenVectors(t *testing.T) {
	t.Parallel()
	hexKey := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, v := range loadKeyVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			want, err := hex.DecodeString(v.PreimageHex)
			require.NoError(t, err)
			require.Equal(t, want, keyPreimage(v.parts()...), "pre-image")

			got := IdempotencyKey(v.RunID, v.StepID, v.LogicalAttemptID, Type(v.EventType), v.PlanVersion)
			require.Regexp(t, hexKey, got)
			require.Equal(t, v.Key, got)
		})
	}
}

func TestIdempotencyKeyVectorsCoverTheTrickyCases(t *testing.T) {
	t.Parallel()
	// Guards the vector file against losing the cases the brief requires.
	var empty, pipe, backslash, escPair, nonASCII bool
	for _, v := range loadKeyVectors(t) {
		for _, p := range v.parts() {
			empty = empty || p == ""
			pipe = pipe || regexp.MustCompile(`\|`).MatchString(p)
			backslash = backslash || regexp.MustCompile(`\\`).MatchString(p)
			escPair = escPair || regexp.MustCompile(`\\\|`).MatchString(p)
			nonASCII = nonASCII || regexp.MustCompile(`[^\x00-\x7f]`).MatchString(p)
		}
	}
	require.True(t, empty && pipe && backslash && escPair && nonASCII)
}

func TestIdempotencyKeyCollisionRegressions(t *testing.T) {
	t.Parallel()
	// Pairs of (stepId, logicalAttemptId) that must stay distinct. The first
	// two collide under plain joining and under escaping only "|".
	pairs := []struct {
		name string
		a, b [2]string
	}{
		{"plain join: pipe moves between components", [2]string{"a|b", "c"}, [2]string{"a", "b|c"}},
		{"escaping only pipes", [2]string{"a\\", "b|c"}, [2]string{"a|b\\", "c"}},
		{"trailing backslash vs escaped pipe", [2]string{"a\\", "|b"}, [2]string{"a", "\\|b"}},
		{"backslash-pipe inside vs split", [2]string{"a\\|", "b"}, [2]string{"a\\", "|b"}},
		{"pipe as whole component", [2]string{"|", ""}, [2]string{"", "|"}},
		{"double backslash vs escape", [2]string{"\\\\", "|"}, [2]string{"\\", "\\|"}},
		{"empty vs separator", [2]string{"", "x"}, [2]string{"|x", ""}},
	}
	for _, tc := range pairs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ka := IdempotencyKey("r1", tc.a[0], tc.a[1], StepStarted, "1")
			kb := IdempotencyKey("r1", tc.b[0], tc.b[1], StepStarted, "1")
			require.NotEqual(t, ka, kb)
			require.NotEqual(t, keyPreimage("r1", tc.a[0], tc.a[1]), keyPreimage("r1", tc.b[0], tc.b[1]))
		})
	}
}

func TestIdempotencyKeyIgnoresEngineAttempt(t *testing.T) {
	t.Parallel()
	// The key has no engineAttemptId input: a redelivery of the same logical
	// attempt must produce the same key, and a new logical attempt a new one.
	k1 := IdempotencyKey("r1", "s", "1", StepCompleted, "v1")
	require.Equal(t, k1, IdempotencyKey("r1", "s", "1", StepCompleted, "v1"))
	require.NotEqual(t, k1, IdempotencyKey("r1", "s", "2", StepCompleted, "v1"))
	require.NotEqual(t, k1, IdempotencyKey("r1", "s", "1", StepFailed, "v1"))
	require.NotEqual(t, k1, IdempotencyKey("r1", "s", "1", StepCompleted, "v2"))
}

// decodePreimage inverts keyPreimage by the scan described on
// IdempotencyKey. ok is false for bytes keyPreimage cannot produce.
func decodePreimage(b []byte) (parts []string, ok bool) {
	var cur []byte
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			if i+1 == len(b) || (b[i+1] != '\\' && b[i+1] != '|') {
				return nil, false
			}
			i++
			cur = append(cur, b[i])
		case '|':
			parts = append(parts, string(cur))
			cur = cur[:0]
		default:
			cur = append(cur, b[i])
		}
	}
	return append(parts, string(cur)), true
}

func TestKeyPreimageRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range loadKeyVectors(t) {
		got, ok := decodePreimage(keyPreimage(v.parts()...))
		require.True(t, ok, v.Name)
		require.Equal(t, v.parts(), got, v.Name)
	}
}

// FuzzIdempotencyKeyInjective checks that different tuples never share a
// pre-image, and that every pre-image decodes back to its tuple (which is
// the injectivity argument on IdempotencyKey). The seeds run with plain
// `go test`; `go test -fuzz FuzzIdempotencyKeyInjective` explores further.
func FuzzIdempotencyKeyInjective(f *testing.F) {
	seeds := [][10]string{
		{"r1", "a|b", "c", "StepStarted", "1", "r1", "a", "b|c", "StepStarted", "1"},
		{"r1", "a\\", "|b", "StepStarted", "1", "r1", "a", "\\|b", "StepStarted", "1"},
		{"r1", "a\\|", "b", "StepStarted", "1", "r1", "a\\", "|b", "StepStarted", "1"},
		{"", "", "", "", "", "", "", "", "", "|"},
		{"|", "\\", "|", "\\", "|", "\\", "|", "\\", "|", "\\"},
		{"r", "étape", "1", "RunStarted", "ß", "r", "étape", "1", "RunStarted", "ß"},
		{"\\\\", "|", "", "", "", "\\", "\\|", "", "", ""},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9])
	}
	f.Fuzz(func(t *testing.T, a0, a1, a2, a3, a4, b0, b1, b2, b3, b4 string) {
		a := []string{a0, a1, a2, a3, a4}
		b := []string{b0, b1, b2, b3, b4}
		pa, pb := keyPreimage(a...), keyPreimage(b...)
		if slices.Equal(a, b) != slices.Equal(pa, pb) {
			t.Fatalf("tuples %q and %q: equal=%v but pre-images equal=%v", a, b, slices.Equal(a, b), slices.Equal(pa, pb))
		}
		for _, tc := range []struct {
			in  []string
			pre []byte
		}{{a, pa}, {b, pb}} {
			got, ok := decodePreimage(tc.pre)
			if !ok || !slices.Equal(got, tc.in) {
				t.Fatalf("pre-image %q of %q decodes to %q (ok=%v)", tc.pre, tc.in, got, ok)
			}
		}
	})
}
