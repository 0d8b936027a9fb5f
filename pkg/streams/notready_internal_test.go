package streams

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// A request is asked again while the bus is not ready: no answer in time,
// JetStream temporarily unavailable (the answer of a cluster regaining
// its quorum, which once ended an engine that started without one), or no
// peers yet to place replicas on (a cluster still forming). Any other
// refusal is final.
func TestNotReadyTellsTransientRefusals(t *testing.T) {
	t.Parallel()
	noPeers := &jetstream.APIError{Code: 400, ErrorCode: errCodeClusterNoPeers, Description: "no suitable peers for placement, peer offline"}
	unavailable := &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("create bucket: %w", noPeers), true},
		{fmt.Errorf("create bucket: %w", unavailable), true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{context.DeadlineExceeded, true},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamNameInUse, Description: "stream name already in use"}, false},
		{&jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "insufficient resources"}, false},
		{jetstream.ErrStreamNotFound, false},
	} {
		require.Equal(t, c.want, NotReady(c.err), "%v", c.err)
	}
}
