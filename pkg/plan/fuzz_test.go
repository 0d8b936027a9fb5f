package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParse checks that Parse never panics, that what it rejects it
// rejects with a *ValidationError, and that every plan it accepts survives
// json.Marshal and Parse unchanged.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.*"))
	require.NoError(f, err)
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(b)
	}
	for _, s := range []string{
		`{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","input":{"x":[1,"\u003c",{"y":null}]}}]}`,
		`{"planId":"p","planVersion":"1","steps":[{"id":"a","kind":"waitSignal","signal":"go","timeout":"1h"}]}`,
		`{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"e","dependsOn":["b"]},{"id":"b","activity":"e","dependsOn":["a"]}]}`,
		"planId: p\nplanVersion: v\nsteps:\n  - {id: a, activity: echo, retry: {jitter: 0, maxAttempts: 1}}\n",
		`{"planId":"p\ud83d\ude00","planVersion":"1","steps":[]}`,
		"a: &x [1]\nb: *x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, Limits{MaxDepth: 16})
		if err != nil {
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.NotEmpty(t, ve.Problems)
			return
		}
		b, err := json.Marshal(p)
		require.NoError(t, err)
		again, err := Parse(b, Limits{MaxDepth: 16})
		require.NoError(t, err, "re-parsing %s", b)
		require.Equal(t, p, again)
	})
}
