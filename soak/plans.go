package soak

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Plan kinds the driver starts. A run's planId is "soak-<kind>", so the
// checker knows each run's kind from the log alone.
const (
	kindLinear  = "linear"  // three echo steps in a row
	kindFanout  = "fanout"  // echo, four echo branches, a join
	kindRetried = "retried" // fail-n-times that succeeds at its third logical attempt
	kindFailing = "failing" // fail-n-times that runs out of attempts: RunFailed
	kindLong    = "long"    // sleep 3 s, then echo
	kindKeyed   = "keyed"   // two steps with an idempotencyKey
	kindWait    = "wait"    // a waitSignal step completed by the signal "go"
	kindPause   = "pause"   // sleep 2 s; the driver sends PAUSE, then RESUME
	kindCancel  = "cancel"  // sleep 5 s; the driver sends CANCEL
	kindLimited = "limited" // sleep 1 s, then echo, under one concurrency limit of limitedRuns places
)

// limitedRuns is how many runs of kindLimited run at once, across every
// engine: the limit the checker holds the log to.
const limitedRuns = 1

// kinds is every plan kind with its weight in the mix.
var kinds = []struct {
	name   string
	weight int
}{
	{kindLinear, 3}, {kindFanout, 2}, {kindRetried, 2}, {kindFailing, 1}, {kindLong, 1},
	{kindKeyed, 2}, {kindWait, 2}, {kindPause, 2}, {kindCancel, 1}, {kindLimited, 2},
}

// keyedSteps are the steps of kindKeyed that carry an idempotencyKey.
var keyedSteps = map[string]bool{"pay": true, "ship": true}

// pickKind draws a plan kind by weight.
func pickKind(rng *rand.Rand) string {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	n := rng.IntN(total)
	for _, k := range kinds {
		if n < k.weight {
			return k.name
		}
		n -= k.weight
	}
	return kindLinear
}

// planID is the planId of a kind's runs.
func planID(kind string) string { return "soak-" + kind }

// kindOf is the kind of a planId, "" when it is not the soak's.
func kindOf(planID string) string {
	k, ok := strings.CutPrefix(planID, "soak-")
	if !ok {
		return ""
	}
	return k
}

// stepTimeout bounds each activity attempt: short, so that the engine's
// sweep finds a lost task within a minute or two (docs/engine.md).
const stepTimeout = `"timeout":"20s"`

// planJSON returns the plan of a kind; key makes idempotency keys unique to
// the run request.
func planJSON(kind, key string) string {
	steps := ""
	switch kind {
	case kindLinear:
		steps = echo("a", "") + "," + echo("b", "a") + "," + echo("c", "b")
	case kindFanout:
		steps = echo("root", "") + "," + echo("f1", "root") + "," + echo("f2", "root") + "," +
			echo("f3", "root") + "," + echo("f4", "root") + "," +
			`{"id":"join","activity":"echo","dependsOn":["f1","f2","f3","f4"],"input":{"join":true},` + stepTimeout + `}`
	case kindRetried:
		steps = echo("prep", "") + `,{"id":"flaky","activity":"fail-n-times","dependsOn":["prep"],` +
			`"input":{"times":2,"key":"` + key + `"},` + stepTimeout +
			`,"retry":{"maxAttempts":4,"initialBackoff":"200ms","maxBackoff":"1s"}},` + echo("done", "flaky")
	case kindFailing:
		steps = `{"id":"bad","activity":"fail-n-times","input":{"times":5,"key":"` + key + `"},` + stepTimeout +
			`,"retry":{"maxAttempts":2,"initialBackoff":"100ms","maxBackoff":"500ms"}},` + echo("never", "bad")
	case kindLong:
		steps = sleep("nap", 3000) + "," + echo("after", "nap")
	case kindKeyed:
		steps = `{"id":"pay","activity":"echo","input":{"k":"` + key + `"},"idempotencyKey":"pay-` + key + `",` + stepTimeout + `},` +
			`{"id":"ship","activity":"sleep","dependsOn":["pay"],"input":{"ms":300},"idempotencyKey":"ship-` + key + `",` +
			stepTimeout + `},` + echo("done", "ship")
	case kindWait:
		steps = echo("prep", "") + `,{"id":"gate","kind":"waitSignal","signal":"go","dependsOn":["prep"]},` + echo("ship", "gate")
	case kindPause:
		steps = sleep("nap", 2000) + "," + echo("after", "nap")
	case kindCancel:
		steps = sleep("nap", 5000) + "," + echo("after", "nap")
	case kindLimited:
		steps = sleep("hold", 1000) + "," + echo("after", "hold")
		return fmt.Sprintf(`{"planId":%q,"planVersion":"1","concurrency":[{"key":"'all'","limit":%d}],"steps":[%s]}`,
			planID(kind), limitedRuns, steps)
	}
	return fmt.Sprintf(`{"planId":%q,"planVersion":"1","steps":[%s]}`, planID(kind), steps)
}

// echo is an echo step after dep ("" for none).
func echo(id, dep string) string {
	return `{"id":"` + id + `","activity":"echo"` + deps(dep) + `,"input":{"step":"` + id + `"},` + stepTimeout + `}`
}

// sleep is a sleep step of ms milliseconds.
func sleep(id string, ms int) string {
	return fmt.Sprintf(`{"id":%q,"activity":"sleep","input":{"ms":%d},%s}`, id, ms, stepTimeout)
}

func deps(dep string) string {
	if dep == "" {
		return ""
	}
	return `,"dependsOn":["` + dep + `"]`
}
