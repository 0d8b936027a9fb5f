package events

import (
	"crypto/sha256"
	"encoding/hex"
)

// IdempotencyKey returns the idempotency key of an event: the SHA-256 of
// runId | stepId | logicalAttemptId | eventType | planVersion, as 64
// lowercase hexadecimal characters (execution-semantics §1.3). The event log
// keeps at most one event per (runId, idempotencyKey), so two emissions of
// the same logical fact (a platform redelivery of the same logical attempt)
// get the same key and collapse into one event. The engineAttemptId is
// deliberately not an input.
//
// # Byte encoding (normative)
//
// The hash input (the pre-image) is built from the five components in the
// order above. Each component is taken as its bytes (Go strings are expected
// to hold UTF-8; no Unicode normalisation is applied and invalid UTF-8 is
// hashed as is). In each component every byte 0x5C (\) is replaced by the
// two bytes 0x5C 0x5C (\\) and every byte 0x7C (|) by the two bytes 0x5C 0x7C
// (\|); no other byte is changed. The escaped components are joined with a
// single 0x7C (|) byte between neighbours, with nothing before the first or
// after the last. Empty components are allowed and encode to no bytes, so
// the pre-image of five empty components is "||||".
//
// Both escaped bytes are ASCII and never occur inside a multi-byte UTF-8
// sequence, so escaping bytes is the same as escaping characters.
//
// # Injectivity
//
// Distinct tuples have distinct pre-images, because the pre-image can be
// decoded back into its tuple by one left-to-right scan: a \ byte and the
// byte after it stand for that second byte inside the current component; a
// | byte not consumed that way ends the current component; any other byte
// stands for itself. An escaped component never contains an unescaped |
// and never ends inside an escape pair (each \ the encoder writes is
// followed by the byte it escapes), so the scan splits the pre-image exactly
// at the separators the encoder wrote and un-escapes each component to its
// original bytes. Since decoding recovers the tuple, two tuples with the
// same pre-image are equal. (Naive joining without escaping is not
// injective: ("a|b", "c") and ("a", "b|c") would both give "a|b|c".)
//
// The specification and golden vectors computed independently of this
// code are in testdata/README.md and testdata/idempotency_vectors.json.
func IdempotencyKey(runID, stepID, logicalAttemptID string, eventType Type, planVersion string) string {
	sum := sha256.Sum256(keyPreimage(runID, stepID, logicalAttemptID, string(eventType), planVersion))
	return hex.EncodeToString(sum[:])
}

// keyPreimage returns the escaped, |-joined encoding of parts described on
// IdempotencyKey. It is kept separate so tests can check injectivity on the
// pre-image itself rather than on hashes.
func keyPreimage(parts ...string) []byte {
	n := len(parts)
	for _, p := range parts {
		n += 2 * len(p)
	}
	buf := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			buf = append(buf, '|')
		}
		for j := range len(p) {
			if c := p[j]; c == '\\' || c == '|' {
				buf = append(buf, '\\')
			}
			buf = append(buf, p[j])
		}
	}
	return buf
}
