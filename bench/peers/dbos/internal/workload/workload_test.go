package workload_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/bench/peers/dbos/internal/pgdb"
	"github.com/weftrun/weft/bench/peers/dbos/internal/workload"
)

// TestThreeEchoes enqueues one workflow from a client and checks that the
// worker ran it as three steps, each echoing the previous output, and
// that the client reads the input back as the result.
func TestThreeEchoes(t *testing.T) {
	ctx := context.Background()
	server := os.Getenv("WEFT_TEST_DATABASE_URL")
	if server == "" {
		server = pgdb.DefaultServer
	}
	db, err := pgdb.Create(ctx, server, "dbos_peer_test")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Drop(context.Background())) })

	worker, err := workload.StartWorker(ctx, db.URL, workload.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dbos.Shutdown(worker, 10*time.Second)) })
	client, err := workload.NewClient(ctx, db.URL, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dbos.Shutdown(client, 10*time.Second)) })

	in := workload.NewOrder(7)
	h, err := workload.Enqueue(client, "test-7", in)
	require.NoError(t, err)
	out, err := h.GetResult(dbos.WithHandlePollingInterval(workload.DefaultPoll), dbos.WithHandleTimeout(time.Minute))
	require.NoError(t, err)
	require.Equal(t, in, out)

	steps, err := dbos.GetWorkflowSteps(client, "test-7")
	require.NoError(t, err)
	names := make([]string, 0, len(steps))
	for _, s := range steps {
		names = append(names, s.StepName)
	}
	require.Equal(t, []string{"a", "b", "c"}, names)
}
