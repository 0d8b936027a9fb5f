package help_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/help"
)

// Help names long flags --name and one-letter ones -x, gives each its
// type and a default that is not its type's zero (strings quoted), then
// the sections; a command without flags has no Flags heading.
func TestWriteSpellsFlagsAsTyped(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("weft x", flag.ContinueOnError)
	fs.String("payload", "", "the event, a `JSON` document")
	fs.String("o", "text", "output format")
	fs.Bool("q", false, "quiet")
	fs.Bool("wait", true, "wait")
	fs.Duration("timeout", 0, "how long")
	fs.Int("limit", 50, "per page")
	var b strings.Builder
	help.Write(&b, "weft x [flags]", fs, "Notes:\n  more\n")
	require.Equal(t, `Usage: weft x [flags]

Flags:
  --limit int
    	per page (default 50)
  -o string
    	output format (default "text")
  --payload JSON
    	the event, a JSON document
  -q	quiet
  --timeout duration
    	how long
  --wait
    	wait (default true)

Notes:
  more
`, b.String())

	b.Reset()
	help.Write(&b, "weft version", flag.NewFlagSet("weft version", flag.ContinueOnError))
	require.Equal(t, "Usage: weft version\n", b.String())
	require.Equal(t, "-o", help.Name("o"))
	require.Equal(t, "--timeout", help.Name("timeout"))
}
