package intake

import (
	"crypto/sha256"
	"strconv"
	"strings"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
)

// escapeComponent makes s safe to be one component of a ':'- or
// '|'-separated key: every byte outside [A-Za-z0-9_.~-] becomes %XX
// (uppercase hex). The encoding is reversible, so two different byte
// sequences never share an escaped form, and the result holds no ':',
// '|' or '%' of its own, so components cannot run into each other
// ("a:b"+"c" and "a"+"b:c" stay apart). Nothing is trimmed, folded or
// normalised: the tier0 contract makes signalId case-sensitive bytes.
func escapeComponent(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// signalKeyPrefix is the storage-key prefix of every acceptance of
// (runID, name, id): "sig:{runId}:{name}:{id}:", name and id escaped.
func signalKeyPrefix(runID, name, id string) string {
	return "sig:" + runID + ":" + escapeComponent(name) + ":" + escapeComponent(id) + ":"
}

// signalStorageKey is the key of the gen-th acceptance of a signal: its
// SignalAccepted event's logicalAttemptId. gen counts from 1 and grows
// only when a signal is accepted again after its record expired, so each
// acceptance's payload has a key of its own.
func signalStorageKey(runID, name, id string, gen int) string {
	return signalKeyPrefix(runID, name, id) + strconv.Itoa(gen)
}

// keyGeneration returns the generation a storage key ends in, or 0.
func keyGeneration(key string) int {
	i := strings.LastIndexByte(key, ':')
	n, err := strconv.Atoi(key[i+1:])
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// runRequestKey is the SHA-256 of a run request's tuple, the uniqueness
// key of idempotent starts (execution-semantics §3): the components
// escaped and joined by '|', so no two tuples share an input.
func runRequestKey(tenant, project, env, planID, planVersion, runRequestID string) []byte {
	parts := []string{tenant, project, env, planID, planVersion, runRequestID}
	for i, p := range parts {
		parts[i] = escapeComponent(p)
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "|")))
	return sum[:]
}

// runRequest is a start's run request as its Repeat makes it: the
// planVersion of its tuple, the tuple's key (runRequestKey) and the
// digest of its request (requestDigest).
type runRequest struct {
	version     string
	key, digest []byte
}

// newRunRequest is start's run request under repeat: its tuple holds the
// version start runs, or api.PlanVersionLatest under RepeatOfRequestID,
// whose digest leaves the plan out.
func newRunRequest(start runstart.Request, repeat Repeat) runRequest {
	rr := runRequest{version: start.Plan.PlanVersion()}
	if repeat == RepeatOfRequestID {
		rr.version = api.PlanVersionLatest
	}
	rr.key = runRequestKey(start.TenantID, start.ProjectID, start.EnvironmentID, start.Plan.PlanID(), rr.version, start.RunRequestID)
	rr.digest = requestDigest(start, rr.key, repeat != RepeatOfRequestID)
	return rr
}
