package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/weftrun/weft/cmd/weft/internal/help"
)

// Env is what a command gets from the binary: its output streams, the
// process environment (a function, so tests can supply their own) and the
// binary's version, which the client sends in its User-Agent.
type Env struct {
	Stdout  io.Writer
	Stderr  io.Writer
	Getenv  func(string) string
	Version string
}

// Command is one CLI command: Summary is its line in the help of its
// group, Run parses its own flags from args and does it.
type Command struct {
	Summary string
	Run     func(ctx context.Context, env *Env, args []string) error
}

// ErrUsage is what a command returns when -h printed its usage: there is
// nothing more to say, and the process exits 1.
var ErrUsage = errors.New("usage")

// flags is a command's flag set; its messages go to the Env's Stderr.
type flags struct {
	*flag.FlagSet
	env *Env
}

// newFlags returns the flag set of `weft <name>`.
func newFlags(name string, env *Env) *flags {
	fs := flag.NewFlagSet("weft "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return &flags{FlagSet: fs, env: env}
}

// string adds a string flag whose default is the value of envKey; its
// usage ends with "(env KEY)", as the services' flags' do.
func (f *flags) string(name, envKey, usage string) *string {
	return f.String(name, f.env.Getenv(envKey), usage+" (env "+envKey+")")
}

// parseArgs parses args, flags and positional arguments in any order, and
// returns the positional ones; everything after "--" is positional. -h
// prints the usage and returns ErrUsage.
func (f *flags) parseArgs(args []string) ([]string, error) {
	var positional []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, ErrUsage
			}
			return nil, f.unknownFlag(err)
		}
		rest := f.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// setUsage makes -h print synopsis, the flags, and footer (help.Write).
func (f *flags) setUsage(synopsis, footer string) {
	f.Usage = func() {
		var sections []string
		if footer != "" {
			sections = append(sections, footer)
		}
		help.Write(f.Output(), synopsis, f.FlagSet, sections...)
	}
}

// wantArgs checks the count of positional arguments against names.
func wantArgs(synopsis string, got []string, names ...string) error {
	if len(got) == len(names) {
		return nil
	}
	want := "no arguments"
	if len(names) > 0 {
		want = strings.Join(names, " and ")
	}
	return fmt.Errorf("want %s, got %d argument(s) %q\nusage: %s", want, len(got), got, synopsis)
}

// unknownFlag turns the flag package's error for a flag the command does
// not have into one that names it as typed and, when one of the
// command's flags is a typo away, suggests it. Other errors are returned
// as they are.
func (f *flags) unknownFlag(err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return err
	}
	name = strings.TrimLeft(name, "-")
	best, bestDist := "", 3 // at most two edits away
	f.VisitAll(func(fl *flag.Flag) {
		if d := editDistance(name, fl.Name); d < bestDist {
			best, bestDist = fl.Name, d
		}
	})
	if best == "" {
		return fmt.Errorf("unknown flag --%s (-h lists the flags)", name)
	}
	return fmt.Errorf("unknown flag --%s: did you mean --%s?", name, best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
