package soak

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Summary is a soak's outcome, printed as a table and written as JSON.
type Summary struct {
	Seed     uint64   `json:"seed"`
	Duration string   `json:"duration"`
	Faults   []string `json:"faultKinds"`
	WorkDir  string   `json:"workDir"`
	// NATSNodes is the number of nats-server nodes (Config.NATSNodes).
	NATSNodes int   `json:"natsNodes"`
	WallMs    int64 `json:"wallMs"`
	// QuiesceMs is how long the runs took to end after the faults stopped.
	QuiesceMs    int64          `json:"quiesceMs"`
	Injected     []faultRec     `json:"faults"`
	Runs         int            `json:"runs"`
	RunsByStatus map[string]int `json:"runsByStatus"`
	Events       int            `json:"events"`
	StartsAcked  int            `json:"startsAcknowledged"`
	SignalsAcked int            `json:"signalsAcknowledged"`
	StartErrors  int            `json:"startErrors"`
	SignalErrors int            `json:"signalErrors"`
	// UnkeyedDuplicates counts extra executions of unkeyed logical
	// attempts (at-least-once delivery allows them).
	UnkeyedDuplicates int `json:"unkeyedDuplicates"`
	// KeyedMaybeDuplicates counts keyed attempts run again after a
	// delivery was cut short by SIGKILL (so the first may not have run).
	KeyedMaybeDuplicates int                      `json:"keyedMaybeDuplicates"`
	AttemptLogLines      int                      `json:"attemptLogLines"`
	Recovery             map[string]recoveryStats `json:"recoveryByFault"`
	Checks               []checkResult            `json:"checks"`
}

// recoveryStats summarizes the recovery times of one fault kind.
type recoveryStats struct {
	Count        int   `json:"count"`
	NotRecovered int   `json:"notRecovered"`
	MinMs        int64 `json:"minMs"`
	MedianMs     int64 `json:"medianMs"`
	MaxMs        int64 `json:"maxMs"`
}

// Failed reports whether an invariant fired or a fault was not recovered
// from.
func (s *Summary) Failed() bool {
	for _, c := range s.Checks {
		if !c.OK && !c.Skipped {
			return true
		}
	}
	for _, f := range s.Injected {
		if f.RecoveryMs < 0 {
			return true
		}
	}
	return false
}

// recovery computes Recovery from Injected.
func (s *Summary) recovery() {
	by := map[string][]int64{}
	s.Recovery = map[string]recoveryStats{}
	for _, f := range s.Injected {
		st := s.Recovery[f.Kind]
		st.Count++
		if f.RecoveryMs < 0 {
			st.NotRecovered++
		} else {
			by[f.Kind] = append(by[f.Kind], f.RecoveryMs)
		}
		s.Recovery[f.Kind] = st
	}
	for k, ms := range by {
		slices.Sort(ms)
		st := s.Recovery[k]
		st.MinMs, st.MedianMs, st.MaxMs = ms[0], ms[len(ms)/2], ms[len(ms)-1]
		s.Recovery[k] = st
	}
}

// writeSummary writes s as JSON to path.
func writeSummary(path string, s *Summary) error {
	s.recovery()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return nil
}

// Print writes the summary table to w.
func (s *Summary) Print(w io.Writer) error {
	s.recovery()
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0) // writes to b cannot fail
	_, _ = fmt.Fprintf(tw, "seed\t%d\n", s.Seed)
	_, _ = fmt.Fprintf(tw, "duration\t%s (wall %.1fs, quiescence %.1fs)\n", s.Duration, float64(s.WallMs)/1000, float64(s.QuiesceMs)/1000)
	_, _ = fmt.Fprintf(tw, "faults injected\t%d\n", len(s.Injected))
	_, _ = fmt.Fprintf(tw, "runs\t%d %s\n", s.Runs, statuses(s.RunsByStatus))
	_, _ = fmt.Fprintf(tw, "events\t%d\n", s.Events)
	_, _ = fmt.Fprintf(tw, "acknowledged\t%d starts, %d signals (gave up on %d starts, %d signals)\n",
		s.StartsAcked, s.SignalsAcked, s.StartErrors, s.SignalErrors)
	_, _ = fmt.Fprintf(tw, "duplicate executions\t%d of unkeyed attempts; %d keyed after a SIGKILL (%d attempt log lines)\n",
		s.UnkeyedDuplicates, s.KeyedMaybeDuplicates, s.AttemptLogLines)
	_, _ = fmt.Fprintln(tw, "\nfault\tcount\tnot recovered\tmin ms\tmedian ms\tmax ms")
	kinds := make([]string, 0, len(s.Recovery))
	for k := range s.Recovery {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		r := s.Recovery[k]
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", k, r.Count, r.NotRecovered, r.MinMs, r.MedianMs, r.MaxMs)
	}
	_, _ = fmt.Fprintln(tw, "\ninvariant\tresult")
	for _, c := range s.Checks {
		verdict := "held"
		switch {
		case c.Skipped:
			verdict = "NOT CHECKED: " + c.Note
		case !c.OK:
			verdict = fmt.Sprintf("FAILED (%d)", c.Count)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\n", c.Name, verdict)
	}
	_ = tw.Flush()
	for _, c := range s.Checks {
		for _, e := range c.Examples {
			fmt.Fprintf(&b, "  %s: %s\n", c.Name, e)
		}
	}
	for _, f := range s.Injected {
		if f.RecoveryMs < 0 {
			fmt.Fprintf(&b, "  fault %s on %s at %s: no progress within the bound %s\n", f.Kind, f.Target,
				f.At.Format("15:04:05"), f.Error)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// statuses formats the runs by status.
func statuses(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(k, "Run"), v))
	}
	sort.Strings(parts)
	return "(" + strings.Join(parts, ", ") + ")"
}
