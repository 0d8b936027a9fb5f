package streams

import (
	"cmp"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// sameDefinition reports whether a stream whose config is have already has
// the definition want: every field Weft's definitions set (base, Cancels,
// TaskLanes) is equal, with JetStream's own defaults for the ones want
// leaves zero (one replica). The fields Weft never sets, which the server
// fills in (MaxMsgsPerSubject, MaxMsgSize, ...), are not compared.
func sameDefinition(have, want jetstream.StreamConfig) bool {
	return have.Name == want.Name &&
		have.Description == want.Description &&
		slices.Equal(have.Subjects, want.Subjects) &&
		have.Retention == want.Retention &&
		have.Storage == want.Storage &&
		have.Discard == want.Discard &&
		have.MaxAge == want.MaxAge &&
		have.MaxBytes == want.MaxBytes &&
		have.MaxMsgs == want.MaxMsgs &&
		have.Duplicates == want.Duplicates &&
		cmp.Or(have.Replicas, 1) == cmp.Or(want.Replicas, 1) &&
		have.DenyDelete == want.DenyDelete &&
		have.DenyPurge == want.DenyPurge &&
		have.AllowDirect == want.AllowDirect &&
		sameTransform(have.SubjectTransform, want.SubjectTransform)
}

// sameTransform reports whether two subject transforms are equal, nil
// being none.
func sameTransform(a, b *jetstream.SubjectTransformConfig) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
