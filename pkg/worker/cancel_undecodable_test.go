package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// Issue #36 item c: the last message on a run's cancel subject does not
// decode (a reply someone aimed at weft.cancel.<runId>). The worker fails
// closed: the run's attempt is held back, never started and reports
// nothing, while another run's attempt runs.
func TestUndecodableCancelNoticeHoldsAttemptBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newRecordingGate()
	close(g.release)
	mp, h, err := metrics.New()
	require.NoError(t, err)
	b.startWorker(t, nil, worker.Config{Concurrency: 1, MeterProvider: mp}, g.register(t))
	victim, other := newTask("gate", ""), newTask("gate", "")
	subject, err := streams.CancelSubject(victim.RunID)
	require.NoError(t, err)
	_, err = b.js.Publish(t.Context(), subject, []byte(`{"schemaVersion":1,"runId":"forged-and-not-a-notice`))
	require.NoError(t, err)
	publishTask(t, b.js, victim)
	publishTask(t, b.js, other)
	require.Equal(t, task.Completed, b.results(t, other.RunID).final().Kind)
	require.Eventually(t, func() bool {
		return strings.Contains(b.logs.String(), "worker: cancel notice undecodable; attempt held back, not started")
	}, 10*time.Second, 10*time.Millisecond)
	metricstest.WaitFor(t, h, 10*time.Second, func(sc metricstest.Scrape) bool {
		n, ok := sc.Sum("weft_worker_attempts_held_total", nil)
		return ok && n >= 1
	})
	g.requireCalls(t, other.RunID+"/build/1")
	requireNoResults(t, b, victim.RunID)
}
