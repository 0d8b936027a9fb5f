package gateway

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// truncate keeps a text of exactly the limit, and cuts one byte longer
// to the limit with the mark, on a rune boundary.
func TestTruncateEdges(t *testing.T) {
	t.Parallel()
	at := strings.Repeat("a", 16)
	require.Equal(t, at, truncate(at, 16))
	require.Equal(t, strings.Repeat("a", 13)+truncatedMark, truncate(at+"b", 16))
	cut := truncate("aa"+strings.Repeat("é", 10), 16) // é is 2 bytes: 13 bytes would split one
	require.Equal(t, "aa"+strings.Repeat("é", 5)+truncatedMark, cut)
	require.LessOrEqual(t, len(cut), 16)
}
