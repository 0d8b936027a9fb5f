package cli

import (
	"flag"
	"fmt"
	"io"

	"github.com/weftrun/weft/cmd/weft/internal/help"
)

// deprecatedAlias adds --old, a deprecated name of the flag --name, which
// must exist: setting it sets --name's value, and each use writes one
// line to stderr naming the flag to use instead. -h leaves --old out: it
// shows synopsis, the other flags and footer, as setUsage does.
func (f *flags) deprecatedAlias(old, name, synopsis, footer string) {
	target := f.Lookup(name)
	f.Var(&aliasValue{Value: target.Value, old: old, name: name, stderr: f.env.Stderr}, old, "deprecated: use "+help.Name(name))
	f.Usage = func() {
		var sections []string
		if footer != "" {
			sections = append(sections, footer)
		}
		help.Write(f.Output(), synopsis, without(f.FlagSet, old), sections...)
	}
}

// without returns a flag set with fs's flags but the one named name,
// each with the default fs shows, for help to list.
func without(fs *flag.FlagSet, name string) *flag.FlagSet {
	visible := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(fl *flag.Flag) {
		if fl.Name == name {
			return
		}
		visible.Var(fl.Value, fl.Name, fl.Usage)
		visible.Lookup(fl.Name).DefValue = fl.DefValue // a flag parsed before -h keeps its default in help
	})
	return visible
}

// aliasValue is the value of a deprecated flag name: the value of the
// flag it names, with a notice on stderr each time it is set.
type aliasValue struct {
	flag.Value
	old, name string
	stderr    io.Writer
}

// String is the value's, "" for a zero aliasValue (which the flag
// package makes to find a flag's zero value).
func (a *aliasValue) String() string {
	if a == nil || a.Value == nil {
		return ""
	}
	return a.Value.String()
}

// Set writes the notice, then sets the value; the notice is best effort,
// as help is: a closed stderr has no reader.
func (a *aliasValue) Set(s string) error {
	_, _ = fmt.Fprintf(a.stderr, "weft: %s is deprecated: use %s\n", help.Name(a.old), help.Name(a.name))
	return a.Value.Set(s)
}
