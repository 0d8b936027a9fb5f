package admission

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// An admission file sets Limits, in YAML or JSON (a JSON document is
// YAML); docs/configuration.md, "Admission limits", is its reference:
//
//	default:                 # every environment not named below
//	  maxConcurrentRuns: 0   # 0: no limit
//	environments:
//	  prod:
//	    maxConcurrentRuns: 20
//	    policy: REJECT       # REJECT, QUEUE (the default) or DELAY
//	    retryAfter: 30s      # Go durations; 0 or absent: the default
//	    delayBy: 10s
//
// `{}` sets no limit. An empty file is refused: it is what a reload may
// read while an editor rewrites the file in place (write a new file and
// rename it over the old one to change it at once).

// FileError is a refusal of an admission file: the field at fault, as a
// dotted path ("environments.prod.policy"; empty for the whole document),
// its line (0 when unknown) and what is wrong with it.
type FileError struct {
	Field string
	Line  int
	Msg   string
}

func (e *FileError) Error() string {
	where := e.Field
	if where == "" {
		where = "the document"
	}
	if e.Line > 0 {
		where += " (line " + strconv.Itoa(e.Line) + ")"
	}
	return "admission file: " + where + ": " + e.Msg
}

// limitFields are the fields of one limit, in the file's spelling.
var limitFields = map[string]func(*Limit, *yaml.Node, string) error{
	"maxConcurrentRuns": parseMaxConcurrentRuns,
	"policy":            parsePolicy,
	"retryAfter":        durationField(func(l *Limit) *time.Duration { return &l.RetryAfter }),
	"delayBy":           durationField(func(l *Limit) *time.Duration { return &l.DelayBy }),
}

// LoadFile reads and parses the admission file at path (ParseFile).
func LoadFile(path string) (Limits, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Limits{}, fmt.Errorf("admission file: %w", err)
	}
	return ParseFile(data)
}

// ParseFile parses an admission file strictly: an unknown or repeated
// field, a value of the wrong type, a negative number or duration, a
// policy other than REJECT, QUEUE and DELAY, an empty file, or more than
// one document is a *FileError naming the field. The limits it returns pass Validate.
func ParseFile(data []byte) (Limits, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Limits{}, &FileError{Msg: "the file is empty (write {} for no limits)"}
		}
		return Limits{}, &FileError{Msg: "invalid YAML or JSON: " + err.Error()}
	}
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return Limits{}, &FileError{Msg: "more than one document; an admission file is one"}
	}
	var l Limits
	err := eachField(doc.Content[0], "", func(key string, v *yaml.Node, path string) error {
		switch key {
		case "default":
			return parseLimit(&l.Default, v, path)
		case "environments":
			envs, err := parseEnvironments(v, path)
			l.PerEnvironment = envs
			return err
		}
		return &FileError{Field: path, Line: v.Line, Msg: "unknown field (the fields are default and environments)"}
	})
	if err != nil {
		return Limits{}, err
	}
	return l, l.Validate()
}

// parseEnvironments parses the mapping of environment names to limits.
func parseEnvironments(n *yaml.Node, path string) (map[string]Limit, error) {
	envs := map[string]Limit{}
	err := eachField(n, path, func(name string, v *yaml.Node, path string) error {
		if name == "" {
			return &FileError{Field: path, Line: v.Line, Msg: "an environment's name is empty"}
		}
		var lim Limit
		if err := parseLimit(&lim, v, path); err != nil {
			return err
		}
		envs[name] = lim
		return nil
	})
	return envs, err
}

// parseLimit parses one limit's mapping into lim.
func parseLimit(lim *Limit, n *yaml.Node, path string) error {
	return eachField(n, path, func(key string, v *yaml.Node, path string) error {
		parse, ok := limitFields[key]
		if !ok {
			return &FileError{Field: path, Line: v.Line,
				Msg: "unknown field (a limit's fields are maxConcurrentRuns, policy, retryAfter and delayBy)"}
		}
		if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
			return &FileError{Field: path, Line: v.Line, Msg: "needs a value"}
		}
		return parse(lim, v, path)
	})
}

// eachField calls field with each key of mapping n, its value and its
// dotted path, refusing anything but a mapping of distinct string keys.
func eachField(n *yaml.Node, path string, field func(key string, v *yaml.Node, path string) error) error {
	if n.Kind != yaml.MappingNode {
		return &FileError{Field: path, Line: n.Line, Msg: "must be a mapping of fields to values"}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return &FileError{Field: path, Line: k.Line, Msg: fmt.Sprintf("the key %q is not a string", k.Value)}
		}
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		if seen[k.Value] {
			return &FileError{Field: p, Line: k.Line, Msg: "set twice"}
		}
		seen[k.Value] = true
		if err := field(k.Value, v, p); err != nil {
			return err
		}
	}
	return nil
}

func parseMaxConcurrentRuns(lim *Limit, v *yaml.Node, path string) error {
	n, err := strconv.Atoi(v.Value)
	if v.ShortTag() != "!!int" || err != nil || n < 0 {
		return &FileError{Field: path, Line: v.Line, Msg: fmt.Sprintf("%q is not a whole number of runs, 0 or more (0: no limit)", v.Value)}
	}
	lim.MaxConcurrentRuns = n
	return nil
}

func parsePolicy(lim *Limit, v *yaml.Node, path string) error {
	p := Policy(v.Value)
	if p != Reject && p != Queue && p != Delay {
		return &FileError{Field: path, Line: v.Line, Msg: fmt.Sprintf("%q is not REJECT, QUEUE or DELAY", v.Value)}
	}
	lim.Policy = p
	return nil
}

// durationField parses a Go duration ("30s", "1m30s"; 0 for the default)
// into the field of Limit that at returns.
func durationField(at func(*Limit) *time.Duration) func(*Limit, *yaml.Node, string) error {
	return func(lim *Limit, v *yaml.Node, path string) error {
		d, err := time.ParseDuration(v.Value)
		if err != nil || d < 0 {
			return &FileError{Field: path, Line: v.Line, Msg: fmt.Sprintf("%q is not a duration of 0 or more, such as 30s or 1m30s", v.Value)}
		}
		*at(lim) = d
		return nil
	}
}
