package main

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// helpTexts runs `weft <command> --help` for every command, and for every
// subcommand a group's help lists, and returns each help by its command
// line ("schedule create").
func helpTexts(t *testing.T) map[string]string {
	t.Helper()
	texts := map[string]string{}
	var visit func(path ...string)
	visit = func(path ...string) {
		r := weft(t, nil, append(path, "--help")...)
		if r.err != nil {
			require.ErrorIs(t, r.err, errUsage, "weft %s --help", strings.Join(path, " "))
		}
		text := r.out + r.errOut
		texts[strings.Join(path, " ")] = text
		for _, sub := range listedCommands(text) {
			visit(append(path, sub)...)
		}
	}
	for name := range commands() {
		visit(name)
	}
	visit("projector", "rebuild") // a subcommand that no group lists
	return texts
}

// listedCommands are the names a group's help lists under "Commands:".
func listedCommands(help string) []string {
	_, list, ok := strings.Cut(help, "\nCommands:\n")
	if !ok {
		return nil
	}
	var names []string
	for _, line := range strings.Split(list, "\n") {
		if line == "" {
			break
		}
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			names = append(names, strings.Fields(line)[0])
		}
	}
	return names
}

var (
	// singleDashLong is a long flag with one dash, as flag.PrintDefaults
	// writes it (-payload); a user types --payload. -o and -f are short.
	singleDashLong = regexp.MustCompile("(?:^|[\\s\\[(|,'\"`])(-[A-Za-z][A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)")
	// belowRef is a reference to a section further down ("Admission limits" below).
	belowRef = regexp.MustCompile(`["']([^"']+)["'] below`)
)

// Every command's help, services' and the CLI's alike, starts with its
// usage line, names each flag as a user types it (--payload, -o), and
// has every section it sends the reader to "below".
func TestHelpSpellsFlagsAsTyped(t *testing.T) {
	t.Parallel()
	texts := helpTexts(t)
	for _, name := range []string{"dev", "engine", "gateway", "schedule create", "trigger send", "run start", "secrets init", "projector rebuild"} {
		require.Contains(t, texts, name)
	}
	names := make([]string, 0, len(texts))
	for name := range texts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		text := texts[name]
		require.True(t, strings.HasPrefix(text, "Usage: weft "+name), "weft %s --help starts with its usage line:\n%s", name, text)
		for i, line := range strings.Split(text, "\n") {
			if m := singleDashLong.FindStringSubmatch(line); m != nil {
				t.Errorf("weft %s --help, line %d: %s has one dash: %q", name, i+1, m[1], line)
			}
		}
		for _, ref := range belowRef.FindAllStringSubmatchIndex(text, -1) {
			heading := text[ref[2]:ref[3]]
			require.Contains(t, text[ref[1]:], "\n"+heading+":\n", "weft %s --help refers to %q below: it has that section", name, heading)
		}
	}
	require.Contains(t, texts["dev"], "\n  --admission-file string\n", "flags print as --name")
	require.Contains(t, texts["trigger send"], "\n  --payload string\n")
	require.Contains(t, texts["trigger send"], "\n  -o string\n", "a one-letter flag keeps one dash")
}
