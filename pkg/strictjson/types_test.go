package strictjson

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// doc is the type most tests decode into: one field of each shape.
type doc struct {
	Name    string            `json:"name"`
	Count   int64             `json:"count"`
	Small   int8              `json:"small"`
	Size    uint16            `json:"size"`
	Ratio   float64           `json:"ratio"`
	Ratio32 float32           `json:"ratio32"`
	On      bool              `json:"on"`
	Steps   []step            `json:"steps"`
	At      time.Time         `json:"at"`
	Wait    duration          `json:"wait"`
	Limits  *limits           `json:"limits"`
	Level   level             `json:"level"`
	Blob    []byte            `json:"blob"`
	Pair    [2]int            `json:"pair"`
	ByID    map[int]string    `json:"byId"`
	ByLevel map[level]int     `json:"byLevel"`
	Any     any               `json:"any"`
	Quoted  int               `json:"quoted,string"`
	QuotedS string            `json:"qs,string"`
	Num     json.Number       `json:"num"`
	Skip    string            `json:"-"`
	Untag   string            // its Go name is its key
	Extra   map[string]*extra `json:"extra"`
	hidden  string            //nolint:unused // never set: unexported fields are not keys
	Embedded
	*Pointed
}

// Embedded is flattened into doc.
type Embedded struct {
	Inner int `json:"inner"`
	Name  int `json:"name"` // shadowed by doc.Name
}

// Pointed is flattened into doc through a pointer.
type Pointed struct {
	Deep bool `json:"deep"`
}

type step struct {
	ID    string            `json:"id"`
	Retry *retry            `json:"retry,omitempty"`
	Input json.RawMessage   `json:"input,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
}

type retry struct {
	MaxAttempts int32 `json:"maxAttempts"`
}

type extra struct {
	V int `json:"v"`
}

// duration has its own encoding: a Go duration string.
type duration time.Duration

var errDuration = errors.New("bad duration")

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errDuration
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errDuration
	}
	*d = duration(v)
	return nil
}

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// limits only decodes specially: it fills in a default and checks a bound,
// and encodes by its Go shape.
type limits struct {
	Max int `json:"max"`
}

func (l *limits) UnmarshalJSON(b []byte) error {
	type plain limits
	v := plain{Max: 10}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Max < 0 {
		return errors.New("max must not be negative")
	}
	*l = limits(v)
	return nil
}

// level is "low" or "high", decoded from text.
type level int

func (l *level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return errors.New("level must be low or high")
	}
	return nil
}

func (l level) MarshalText() ([]byte, error) {
	if l == 2 {
		return []byte("high"), nil
	}
	return []byte("low"), nil
}

// node is recursive.
type node struct {
	V    int     `json:"v"`
	Kids []*node `json:"kids"`
}

// problemsOf asserts that err is an *Error and returns its problems.
func problemsOf(t *testing.T, err error) []Problem {
	t.Helper()
	var se *Error
	require.ErrorAs(t, err, &se)
	require.NotEmpty(t, se.Problems)
	return se.Problems
}

// where is the path and code of a problem.
type where struct{ Path, Code string }

// wheres returns the paths and codes of ps.
func wheres(ps []Problem) []where {
	out := make([]where, 0, len(ps))
	for _, p := range ps {
		out = append(out, where{p.Path, p.Code})
	}
	return out
}
