// Package help writes the help of the weft binary's commands, the same
// way for each: the synopsis, the flags as a user types them (--name, and
// -x for a one-letter flag), then the command's own sections.
package help

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Write writes a command's help to w: "Usage: " and synopsis, the flags of
// fs (Flags) under "Flags:" unless it has none, then each of sections
// after a blank line. A section is whole lines: its heading ("Exit
// codes:") and its text.
func Write(w io.Writer, synopsis string, fs *flag.FlagSet, sections ...string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n", synopsis)
	if hasFlags(fs) {
		b.WriteString("\nFlags:\n")
		Flags(&b, fs)
	}
	for _, s := range sections {
		b.WriteString("\n" + s)
	}
	_, _ = io.WriteString(w, b.String()) // help is best effort: a closed stream has no reader
}

// Flags writes the flags of fs to w in name order, as flag.PrintDefaults
// lays them out but each named as Name spells it.
func Flags(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	fs.VisitAll(func(fl *flag.Flag) {
		line := "  " + Name(fl.Name)
		typ, text := flag.UnquoteUsage(fl)
		if typ != "" {
			line += " " + typ
		}
		b.WriteString(line)
		if len(line) <= 4 { // a one-letter bool: its text fits after it
			b.WriteString("\t")
		} else {
			b.WriteString("\n    \t")
		}
		b.WriteString(strings.ReplaceAll(text, "\n", "\n    \t"))
		if !isZero(fl) {
			if isString(fl) {
				fmt.Fprintf(&b, " (default %q)", fl.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %v)", fl.DefValue)
			}
		}
		b.WriteString("\n")
	})
	_, _ = io.WriteString(w, b.String())
}

// Name is flag name as a user types it: -x for a one-letter name, --name
// for a longer one.
func Name(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// isZero says whether fl's default is its type's zero value, which help
// does not print (as flag.PrintDefaults does not either).
func isZero(fl *flag.Flag) bool {
	typ := reflect.TypeOf(fl.Value)
	if typ.Kind() != reflect.Pointer {
		return fl.DefValue == ""
	}
	zero, ok := reflect.New(typ.Elem()).Interface().(flag.Value)
	return ok && fl.DefValue == zero.String()
}

// isString says whether fl holds a string, whose default help quotes.
func isString(fl *flag.Flag) bool {
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(string)
	return ok
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}
