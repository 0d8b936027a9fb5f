package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// The worker's per-delivery log lines (pkg/worker, docs/worker-protocol.md
// "Logs"): "worker: attempt started" when a delivery is taken, "worker:
// attempt ended" with settled_by "activity" when the activity itself ran.
const (
	msgAttemptStarted = "worker: attempt started"
	msgAttemptEnded   = "worker: attempt ended"
	settledByActivity = "activity"
)

// attemptLine is what the checker reads of one of those lines.
type attemptLine struct {
	Time      time.Time `json:"time"`
	Msg       string    `json:"msg"`
	RunID     string    `json:"run_id"`
	StepID    string    `json:"step_id"`
	Logical   string    `json:"logical_attempt_id"`
	Delivery  string    `json:"engine_attempt_id"`
	SettledBy string    `json:"settled_by"`
}

// execution is one run of an activity a worker's logs prove or allow.
type execution struct {
	worker   string // proc name and instance, "worker-1.2"
	delivery string
	at       time.Time
	// maybe: the delivery started in an instance killed before it logged
	// its end, so the activity may or may not have run.
	maybe bool
}

// attemptKey is one logical attempt of a step.
type attemptKey struct{ run, step, logical string }

// readExecutions reads every worker instance's log and returns the
// executions of each logical attempt, and how many attempt lines it read.
func readExecutions(top *topology) (map[attemptKey][]execution, int, error) {
	out := map[attemptKey][]execution{}
	lines := 0
	for _, p := range top.procs.ofKind("worker") {
		for _, inst := range p.history() {
			n, err := readInstance(inst, fmt.Sprintf("%s.%d", p.name, inst.n), out)
			if err != nil {
				return nil, 0, err
			}
			lines += n
		}
	}
	return out, lines, nil
}

// readInstance adds one instance's executions to out.
func readInstance(inst instance, name string, out map[attemptKey][]execution) (int, error) {
	f, err := os.Open(inst.log)
	if err != nil {
		return 0, fmt.Errorf("worker log: %w", err)
	}
	defer func() { _ = f.Close() }()
	type delivery struct {
		attemptKey
		id string
	}
	open := map[delivery]time.Time{} // started, no end yet
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), "worker: attempt ") {
			continue
		}
		var l attemptLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.RunID == "" {
			continue
		}
		n++
		d := delivery{attemptKey{l.RunID, l.StepID, l.Logical}, l.Delivery}
		switch l.Msg {
		case msgAttemptStarted:
			open[d] = l.Time
		case msgAttemptEnded:
			started, ok := open[d]
			delete(open, d)
			if l.SettledBy == settledByActivity {
				if !ok {
					started = l.Time
				}
				out[d.attemptKey] = append(out[d.attemptKey], execution{worker: name, delivery: d.id, at: started})
			}
		}
	}
	if !inst.killed.IsZero() { // deliveries cut short by SIGKILL may have run
		for d, at := range open {
			out[d.attemptKey] = append(out[d.attemptKey], execution{worker: name, delivery: d.id, at: at, maybe: true})
		}
	}
	return n, sc.Err()
}

// checkExecutions fires when a keyed logical attempt was executed twice
// for certain (two "activity" ends), and counts the extra executions of
// unkeyed attempts, which at-least-once delivery allows.
func checkExecutions(ctx context.Context, top *topology, sum *Summary) (checkResult, error) {
	res := checkResult{Name: "no keyed attempt executed twice", OK: true}
	execs, lines, err := readExecutions(top)
	switch {
	case err != nil:
		res.Skipped, res.Note = true, err.Error()
		return res, nil //nolint:nilerr // an unreadable log leaves the check undone, reported as such
	case lines == 0:
		res.Skipped, res.Note = true, "the workers logged no per-attempt lines"
		return res, nil
	}
	kinds, err := runKinds(ctx, top)
	if err != nil {
		return res, err
	}
	for k, xs := range execs {
		sure := 0
		for _, x := range xs {
			if !x.maybe {
				sure++
			}
		}
		keyed := kinds[k.run] == kindKeyed && keyedSteps[k.step]
		switch {
		case keyed && sure > 1:
			res.add("%s step %s attempt %s: %s", k.run, k.step, k.logical, describe(xs))
		case keyed && len(xs) > 1:
			sum.KeyedMaybeDuplicates++
		case len(xs) > 1:
			sum.UnkeyedDuplicates += len(xs) - 1
		}
	}
	sum.AttemptLogLines = lines
	return res, nil
}

// describe lists executions for a report.
func describe(xs []execution) string {
	var parts []string
	for _, x := range xs {
		s := fmt.Sprintf("%s delivery %s at %s", x.worker, x.delivery, x.at.Format("15:04:05.000"))
		if x.maybe {
			s += " (cut short by SIGKILL)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
