package task

import (
	"crypto/sha256"
	"encoding/hex"
)

// msgIDPrefix begins a result's Nats-Msg-Id when it is bound to a token,
// so it never equals a bare idempotency key.
const msgIDPrefix = "rt1-"

// MsgID returns the Nats-Msg-Id r is published with on WEFT_RESULTS. With
// a Token it is msgIDPrefix and the hex SHA-256 of the token and the
// idempotency key: the same for every delivery of the attempt (the token
// is the engine's signature of the run, step and logical attempt), so a
// retried publish or a redelivered attempt is still deduplicated, but
// only the holder of the task can compute it. A result forged without
// the token therefore cannot claim the id first and make JetStream
// discard the real result as a duplicate. Without a Token (an engine
// that signs nothing) it is the idempotency key, as before tokens.
func (r Result) MsgID() string {
	if r.Token == "" {
		return r.IdempotencyKey
	}
	h := sha256.New()
	h.Write([]byte(r.Token))
	h.Write([]byte{0})
	h.Write([]byte(r.IdempotencyKey))
	return msgIDPrefix + hex.EncodeToString(h.Sum(nil))
}
