package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// configDoc is the configuration table's file; the table sits between the
// markers and is generated from the commands' flag sets.
const (
	configDoc   = "../../docs/configuration.md"
	beginMarker = "<!-- BEGIN GENERATED: WEFT_UPDATE_DOCS=1 go test ./cmd/weft -run TestConfigurationDoc -->\n"
	endMarker   = "<!-- END GENERATED -->\n"
)

// documented are the commands of docs/configuration.md, in its order, each
// with its real flag set.
func documented() []struct {
	name  string
	flags func(*environment) *flags
} {
	return []struct {
		name  string
		flags func(*environment) *flags
	}{
		{"dev", func(e *environment) *flags { f, _ := devFlags(e); return f }},
		{"gateway", func(e *environment) *flags { f, _ := gatewayFlags(e); return f }},
		{"engine", func(e *environment) *flags { f, _ := engineFlags(e); return f }},
		{"worker", func(e *environment) *flags { f, _ := workerFlags(e); return f }},
		{"projector", func(e *environment) *flags { f, _ := projectorFlags(e); return f }},
		{"relay", func(e *environment) *flags { f, _ := relayFlags(e); return f }},
		{"migrate", func(e *environment) *flags { f, _ := migrateFlags(e); return f }},
		{"maintain", func(e *environment) *flags { f, _ := maintainFlags(e); return f }},
		{"health", func(e *environment) *flags { f, _ := healthFlags(e); return f }},
		{"secrets init", func(e *environment) *flags { f, _ := secretsInitFlags(e); return f }},
	}
}

// configTable renders every documented command's flags, with an empty
// environment so that the defaults are the built-in ones.
func configTable(t *testing.T) string {
	t.Helper()
	env := &environment{stdout: &weftest.Buffer{}, stderr: &weftest.Buffer{}, getenv: envOf(nil)}
	var b strings.Builder
	for _, c := range documented() {
		f := c.flags(env)
		fmt.Fprintf(&b, "\n### `weft %s`\n\n| Flag | Variable | Default | Meaning |\n|---|---|---|---|\n", c.name)
		seen := map[string]string{}
		f.VisitAll(func(fl *flag.Flag) {
			key := f.envKeys[fl.Name]
			require.NotEmpty(t, key, "weft %s --%s reads no environment variable", c.name, fl.Name)
			require.NotContains(t, seen, key, "weft %s: --%s and --%s share %s", c.name, fl.Name, seen[key], key)
			seen[key] = fl.Name
			usage, ok := strings.CutSuffix(fl.Usage, envNote(key))
			require.True(t, ok, "weft %s --%s: the usage ends with %q", c.name, fl.Name, envNote(key))
			def := ""
			if fl.DefValue != "" {
				def = "`" + fl.DefValue + "`"
			}
			fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s |\n", fl.Name, key, def, strings.ReplaceAll(usage, "|", `\|`))
		})
	}
	return b.String()
}

// docs/configuration.md holds the flag table of every service command as
// the flag sets define it. WEFT_UPDATE_DOCS=1 rewrites it.
func TestConfigurationDoc(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"dev", "gateway", "engine", "worker", "projector", "relay", "migrate", "maintain"} {
		require.Contains(t, commands(), name)
	}
	want := configTable(t)
	raw, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	doc := string(raw)
	head, rest, ok := strings.Cut(doc, beginMarker)
	require.True(t, ok, "%s has the begin marker", configDoc)
	got, tailText, ok := strings.Cut(rest, endMarker)
	require.True(t, ok, "%s has the end marker", configDoc)
	if os.Getenv("WEFT_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(configDoc, []byte(head+beginMarker+want+"\n"+endMarker+tailText), 0o600))
		return
	}
	require.Equal(t, want+"\n", got, "%s is out of date: run WEFT_UPDATE_DOCS=1 go test ./cmd/weft -run TestConfigurationDoc", configDoc)
}
