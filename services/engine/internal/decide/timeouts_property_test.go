package decide

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// TestDecideTimeoutProperties is TestDecideProperties over plans with
// timeouts: random plans whose activity steps have schedule-to-start and
// heartbeat timeouts of a few seconds, and half of them a runTimeout, run
// through the same random deliveries (timers mostly on time, some early,
// some redelivered), with the same checks at every round (fold = Decide's
// working state, Decide pure and idempotent) and at the end.
func TestDecideTimeoutProperties(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 0x71e0))
			steps := randomPlan(r)
			for i := range steps {
				if steps[i].Kind == plan.KindWaitSignal {
					continue
				}
				secs := func() plan.Duration { return plan.Duration(time.Duration(1+r.IntN(5)) * time.Second) }
				switch r.IntN(4) {
				case 0:
					steps[i].ScheduleToStartTimeout = secs()
				case 1:
					steps[i].HeartbeatTimeout = secs()
				case 2:
					steps[i].ScheduleToStartTimeout, steps[i].HeartbeatTimeout = secs(), secs()
				default:
				}
			}
			w := &world{t: t, r: r, b: setupWith(t, events.RunApprovedData{Input: json.RawMessage(`{"n": 1}`)}, steps...)}
			if r.IntN(2) == 0 {
				w.b.p.RunTimeout = plan.Duration(time.Duration(1+r.IntN(30)) * time.Second)
				w.b.p.SchemaVersion = plan.SchemaVersionExpressions
			}
			w.bag = []message{{in: approve()}}
			for round := 0; w.step(); round++ {
				require.Less(t, round, 5000, "the run does not end")
			}
			requireRunInvariants(t, w.b)
		})
	}
}
