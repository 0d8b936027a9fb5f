package streams_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
)

// The reconciliation lookup is core NATS request-reply: a valid subject
// that no stream captures, or JetStream would store the requests and
// answer them with publish acks.
func TestReconcileSubjectIsNotCaptured(t *testing.T) {
	t.Parallel()
	require.NoError(t, streams.ValidSubject(streams.ReconcileSubject))
	require.NoError(t, streams.ValidToken(streams.ReconcileQueue))
	for _, sc := range streams.All(streams.Config{}) {
		for _, filter := range sc.Subjects {
			require.False(t, matches(filter, streams.ReconcileSubject), "%s (%s) captures the lookups", sc.Name, filter)
		}
	}
	require.True(t, matches("weft.engine.*", streams.ReconcileSubject), "the matcher matches")
}

// matches reports whether subject matches filter, with NATS wildcards.
func matches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s) || (tok != "*" && tok != s[i]):
			return false
		}
	}
	return len(f) == len(s)
}
