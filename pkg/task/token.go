package task

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// This file holds the task token (docs/worker-protocol.md, "Task tokens"):
// the engine signs every task it dispatches for the logical
// attempt it asks for, a worker echoes the token unchanged in every Result
// and ReconcileRequest of that task, and the engine accepts only a result
// or lookup whose token it signed for the same run, step and logical
// attempt. A worker credential alone can then no longer complete, fail or
// look up another run's steps: it needs a task of that attempt.

// MinTaskKeyBytes is the shortest task key a Signer accepts: an HMAC-SHA256
// key as long as the hash.
const MinTaskKeyBytes = 32

// tokenPrefix versions the token format; a token of another format never
// verifies.
const tokenPrefix = "v1."

// tokenDomain separates the MAC of a task token from any other use of the
// key.
const tokenDomain = "weft/task-token/v1"

// ErrTaskKey reports a task key a Signer cannot use.
var ErrTaskKey = errors.New("task: bad task key")

// Signer signs and verifies task tokens with HMAC-SHA256. It signs with its
// current key and verifies against the current key and then each previous
// one, so keys rotate without refusing the tokens of tasks in flight
// (docs/security.md). Every engine of a deployment must hold the same
// keys. A Signer is safe for concurrent use.
type Signer struct {
	keys [][]byte // keys[0] is the current key
}

// NewSigner returns the Signer of current and the previous keys still
// accepted. Each key must be at least MinTaskKeyBytes long.
func NewSigner(current []byte, previous ...[]byte) (*Signer, error) {
	keys := make([][]byte, 0, 1+len(previous))
	for i, k := range append([][]byte{current}, previous...) {
		if len(k) < MinTaskKeyBytes {
			return nil, fmt.Errorf("%w: key %d is %d bytes, under %d", ErrTaskKey, i+1, len(k), MinTaskKeyBytes)
		}
		keys = append(keys, append([]byte(nil), k...))
	}
	return &Signer{keys: keys}, nil
}

// ParseTaskKeys reads task keys from text: one base64 key (standard or URL
// alphabet, padded or not) per line or comma-separated, the first the
// current key and the others previous keys still accepted; blank lines
// and lines starting with '#' are skipped. This is the format of a task
// key file and of WEFT_TASK_KEY.
func ParseTaskKeys(text string) (*Signer, error) {
	var keys [][]byte
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for field := range strings.SplitSeq(line, ",") {
			field = strings.TrimSpace(field)
			if field == "" {
				continue
			}
			k, err := decodeKey(field)
			if err != nil {
				return nil, fmt.Errorf("%w: key %d is not base64", ErrTaskKey, len(keys)+1)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrTaskKey)
	}
	return NewSigner(keys[0], keys[1:]...)
}

// EncodeTaskKey returns key in the format ParseTaskKeys reads.
func EncodeTaskKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// Sign returns the token of one logical attempt of a step of a run, with
// the current key: "v1." and the base64url (unpadded) HMAC-SHA256 of the
// three ids, each length-prefixed.
func (s *Signer) Sign(runID, stepID, logicalAttemptID string) string {
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(s.mac(s.keys[0], runID, stepID, logicalAttemptID))
}

// Verify reports whether token is the token of the logical attempt under
// the current key or a previous one. The comparison is constant-time; an
// empty or malformed token never verifies.
func (s *Signer) Verify(token, runID, stepID, logicalAttemptID string) bool {
	b64, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	for _, k := range s.keys {
		if hmac.Equal(got, s.mac(k, runID, stepID, logicalAttemptID)) {
			return true
		}
	}
	return false
}

// mac is the HMAC-SHA256 under key of the canonical encoding of the
// attempt: the domain, then each id as a big-endian uint32 length and its
// bytes, so no two attempts encode alike.
func (s *Signer) mac(key []byte, ids ...string) []byte {
	h := hmac.New(sha256.New, key)
	var n [4]byte
	for _, id := range append([]string{tokenDomain}, ids...) {
		binary.BigEndian.PutUint32(n[:], uint32(len(id))) //nolint:gosec // ids are far below 4 GiB
		h.Write(n[:])
		h.Write([]byte(id))
	}
	return h.Sum(nil)
}
