package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// The heartbeat bucket is asked for again while the bus is not ready: no
// answer in time, or no peers yet to place its replicas on (the refusal a
// cluster still forming gave the cluster soak's engine). Any other
// refusal is final.
func TestBusNotReadyTellsTransientRefusals(t *testing.T) {
	t.Parallel()
	noPeers := &jetstream.APIError{Code: 400, ErrorCode: errCodeClusterNoPeers, Description: "no suitable peers for placement, peer offline"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("create bucket: %w", noPeers), true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{context.DeadlineExceeded, true},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamNameInUse, Description: "stream name already in use"}, false},
		{jetstream.ErrStreamNotFound, false},
	} {
		require.Equal(t, c.want, busNotReady(c.err), "%v", c.err)
	}
}
