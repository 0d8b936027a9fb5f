package streams

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errCodeClusterNoPeers is JetStream's refusal of a stream or bucket
// whose replicas it has no servers to place on ("no suitable peers for
// placement", JSClusterNoPeersErrF): in a cluster still forming, a server
// is not yet a peer; in a running one, a server is down.
const errCodeClusterNoPeers jetstream.ErrorCode = 10005

// NotReady reports whether err is a JetStream API request that the bus
// could not serve yet, and that is worth asking again: no answer in time
// or no server to answer (a cluster electing a leader, a server
// restarting), a 503 (JetStream "temporarily unavailable" while a
// restarted cluster regains its quorum), or a refusal for want of peers
// to place replicas on (a server still joining). Any other refusal (a
// name in use, a bad configuration, a permission) is final.
func NotReady(err error) bool {
	if apiErr, ok := errors.AsType[*jetstream.APIError](err); ok {
		return apiErr.Code == 503 || apiErr.ErrorCode == errCodeClusterNoPeers
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders)
}
