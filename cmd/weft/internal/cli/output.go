package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// table writes rows of tab-separated cells aligned in columns, keeping the
// first write error for flush.
type table struct {
	tw  *tabwriter.Writer
	err error
}

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

// row writes one formatted row (format ends with "\n").
func (t *table) row(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.tw, format, args...)
	}
}

// flush writes the aligned rows out and returns the first error.
func (t *table) flush() error {
	if t.err != nil {
		return t.err
	}
	return t.tw.Flush()
}

// writeJSON writes v as indented JSON and a newline: the -o json form of
// every command's answer.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printAs writes v in format: as JSON (writeJSON), or for people with
// text.
func printAs[T any](w io.Writer, format outputFormat, v T, text func(io.Writer, T) error) error {
	if format == outputJSON {
		return writeJSON(w, v)
	}
	return text(w, v)
}

// printRunNow is printRun at the present time, without step details.
func printRunNow(w io.Writer, v *api.RunView) error { return printRun(w, v, nil, time.Now()) }

// runDetail is what `weft run get` shows: the run's view and the detail
// of each of its steps (input, output, skip reason, attempts), which the
// view does not carry. It encodes as the view with stepDetails added.
type runDetail struct {
	*api.RunView
	StepDetails map[string]*events.StepDetail `json:"stepDetails"`
}

// printRunDetailNow is printRun of d at the present time.
func printRunDetailNow(w io.Writer, d runDetail) error {
	return printRun(w, d.RunView, d.StepDetails, time.Now())
}

// printRun writes a run's view for people: its identity, status, input
// and output, then one row per step of its plan (a forEach step with its
// children's progress, not a row per child). With details, each row also
// shows the step's input and output, shortened.
func printRun(w io.Writer, v *api.RunView, details map[string]*events.StepDetail, now time.Time) error {
	tw := newTable(w)
	tw.row("Run\t%s\n", v.RunID)
	tw.row("Plan\t%s %s\n", v.PlanID, v.PlanVersion)
	tw.row("Where\ttenant %s, project %s, environment %s\n", v.TenantID, v.ProjectID, v.EnvironmentID)
	if len(v.Labels) > 0 {
		tw.row("Labels\t%s\n", formatLabels(v.Labels))
	}
	if p := v.Parent; p != nil {
		tw.row("Parent\trun %s, step %s (attempt %s, depth %d)\n", p.RunID, p.StepID, p.LogicalAttemptID, p.Depth)
	}
	if r := v.RerunOf; r != nil {
		tw.row("Rerun of\trun %s from step %s\n", r.RunID, r.FromStepID)
	}
	tw.row("Status\t%s\n", runStatusLine(v, now))
	if v.Queued != nil {
		tw.row("Queued\t%s\n", queuedText(v.Queued, now))
	}
	if v.Error != nil {
		tw.row("Error\t%s\n", stepErrorText(v.Error))
	}
	if len(v.Input) > 0 {
		tw.row("Input\t%s\n", shorten(string(v.Input), maxOutputShown))
	}
	if len(v.Output) > 0 {
		tw.row("Output\t%s\n", shorten(string(v.Output), maxOutputShown))
	}
	if v.Stale && v.Gap != nil {
		tw.row("Stale\tevents after runSeq %d are missing (seen %d); the projector is catching up\n", v.Gap.AfterSeq, v.Gap.SeenSeq)
	}
	tw.row("\n")
	if details == nil {
		tw.row("STEP\tDOES\tSTATUS\tATTEMPTS\tDURATION\tERROR\n")
		for _, s := range stepRows(v) {
			tw.row("%s\t%s\t%s\t%s\t%s\t%s\n", s.id, s.does, s.status, s.attempts, s.duration, s.err)
		}
		return tw.flush()
	}
	tw.row("STEP\tDOES\tSTATUS\tATTEMPTS\tDURATION\tINPUT\tOUTPUT\tERROR\n")
	for _, s := range stepRows(v) {
		in, out := stepData(details[s.id])
		tw.row("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.id, s.does, s.status, s.attempts, s.duration, in, out, s.err)
	}
	return tw.flush()
}

// maxStepDataShown bounds a step's input and output in printRun's table;
// -o json shows them whole.
const maxStepDataShown = 48

// stepData is a step's input and output as printRun's table shows them:
// shortened, the input marked "(plan)" when it is the plan's static one.
func stepData(d *events.StepDetail) (in, out string) {
	if d == nil {
		return "-", "-"
	}
	in = shorten(string(d.Input), maxStepDataShown)
	if d.InputSource == events.InputPlan {
		in += " (plan)"
	}
	return in, shorten(string(d.Output), maxStepDataShown)
}

// maxOutputShown bounds the run's output printRun shows; -o json shows it
// all.
const maxOutputShown = 2000

// runStatusLine is "COMPLETED, 3/3 steps done, 2s".
func runStatusLine(v *api.RunView, now time.Time) string {
	return fmt.Sprintf("%s, %d/%d steps done, %s", v.Status, v.StepsDone(), v.StepsTotal(), runElapsed(v, now))
}

// queuedText is why a QUEUED run waits and for how long: "2 of 2
// running in environment cust-1, for 4s".
func queuedText(q *events.QueueHold, now time.Time) string {
	reason := cmp.Or(q.Reason, "held by its environment's admission limit")
	return fmt.Sprintf("%s, for %s", reason, now.Sub(q.Since).Round(time.Second))
}

// stepRow is one step as printRun shows it.
type stepRow struct{ id, does, status, attempts, duration, err string }

// stepRows lists the plan's steps in declaration order, then any step the
// snapshot knows that the plan graph does not, but for the children of
// forEach steps, which their parent's row counts.
func stepRows(v *api.RunView) []stepRow {
	snaps := make(map[string]events.StepSnapshot, len(v.Steps))
	for _, s := range v.Steps {
		snaps[s.StepID] = s
	}
	rows := make([]stepRow, 0, v.StepsTotal())
	seen := make(map[string]bool, len(v.Plan.Steps))
	for _, ps := range v.Plan.Steps {
		seen[ps.ID] = true
		rows = append(rows, newStepRow(ps, snaps[ps.ID]))
	}
	for _, s := range v.TopSteps() {
		if !seen[s.StepID] {
			rows = append(rows, newStepRow(api.PlanStep{ID: s.StepID}, s))
		}
	}
	return rows
}

func newStepRow(ps api.PlanStep, s events.StepSnapshot) stepRow {
	r := stepRow{id: ps.ID, does: stepDoes(ps), status: string(cmp.Or(s.Status, events.StepStatusPending)), attempts: "-", duration: "-", err: "-"}
	if s.Attempts > 0 {
		r.attempts = fmt.Sprint(s.Attempts)
	}
	if s.StartedAt != nil && s.CompletedAt != nil {
		r.duration = s.CompletedAt.Sub(*s.StartedAt).Round(time.Millisecond).String()
	}
	if s.Error != nil {
		r.err = stepErrorText(s.Error)
	}
	if f := s.ForEach; f != nil {
		r.does += fmt.Sprintf(" ×%d (%d done, %d running, %d failed)", f.Count, f.Done, f.Running, f.Failed)
	}
	if s.ChildRunID != "" {
		r.does = "child run " + s.ChildRunID
	}
	if s.ReusedFrom != nil {
		r.status += " (reused from run " + s.ReusedFrom.RunID + ")"
	}
	return r
}

// stepDoes says what a step does: its activity, the signal it waits for,
// or, for a subPlan step, that it starts a child run (newStepRow names
// the child once it has one).
func stepDoes(ps api.PlanStep) string {
	switch {
	case ps.Kind == "subPlan":
		return "starts a child run"
	case ps.Kind == "waitSignal":
		return "waits for signal " + ps.Signal
	case ps.Activity != "":
		return ps.Activity
	default:
		return "-"
	}
}

// stepErrorText is "CODE: message".
func stepErrorText(e *events.StepError) string {
	if e.Code == events.CodeSkipped && e.Message == plan.ConditionFalse {
		return e.Code + ": its if condition was false (" + plan.ConditionFalse + ")"
	}
	return e.Code + ": " + e.Message
}

// runElapsed is how long the run has run, to the millisecond: its total
// duration once it ended, else the time since it started (or was
// approved), never negative.
func runElapsed(v *api.RunView, now time.Time) time.Duration {
	switch {
	case v.TotalDurationMs != nil:
		return time.Duration(*v.TotalDurationMs) * time.Millisecond
	case v.StartedAt != nil:
		return max(now.Sub(*v.StartedAt), 0).Round(time.Millisecond)
	case !v.CreatedAt.IsZero():
		return max(now.Sub(v.CreatedAt), 0).Round(time.Millisecond)
	default:
		return 0
	}
}

// printEvents writes one line per event: runSeq, time, type, step and
// logical attempt, and the event's data, shortened.
func printEvents(w io.Writer, evs []events.Event) error {
	tw := newTable(w)
	tw.row("SEQ\tTIME\tTYPE\tSTEP\tATTEMPT\tDATA\n")
	for _, e := range evs {
		at := e.PersistedAt
		if at.IsZero() {
			at = e.EmittedAt
		}
		tw.row("%d\t%s\t%s\t%s\t%s\t%s\n", e.RunSeq, at.Local().Format("15:04:05.000"), e.EventType,
			cmp.Or(e.StepID, "-"), cmp.Or(e.LogicalAttemptID, "-"), shorten(string(e.EventData), 80))
	}
	return tw.flush()
}

// shorten cuts s to at most n runes, marking a cut with "…".
func shorten(s string, n int) string {
	if s == "" {
		return "-"
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// printRunList writes one line per run, and nextPage, the command that
// lists the next page, if there is one.
func printRunList(w io.Writer, list *api.RunList, nextPage string) error {
	tw := newTable(w)
	tw.row("RUN\tPLAN\tSTATUS\tSTEPS\tCREATED\tDURATION\tLABELS\n")
	for _, r := range list.Runs {
		status := string(r.Status)
		if r.Stale {
			status += " (stale)"
		}
		dur := "-"
		if r.TotalDurationMs != nil {
			dur = (time.Duration(*r.TotalDurationMs) * time.Millisecond).String()
		}
		tw.row("%s\t%s %s\t%s\t%d/%d\t%s\t%s\t%s\n", r.RunID, r.PlanID, r.PlanVersion, status,
			r.StepsDone, r.StepsTotal, r.CreatedAt.Local().Format(time.DateTime), dur, cmp.Or(formatLabels(r.Labels), "-"))
	}
	if err := tw.flush(); err != nil {
		return err
	}
	return printListEnd(w, len(list.Runs), "(no runs)", nextPage)
}

// printListEnd ends a list of n items: with empty when n is 0 and empty is
// not "", else with "More: " and nextPage when there is a next page.
func printListEnd(w io.Writer, n int, empty, nextPage string) error {
	var err error
	switch {
	case n == 0 && empty != "":
		_, err = fmt.Fprintln(w, empty)
	case nextPage != "":
		_, err = fmt.Fprintf(w, "More: %s\n", nextPage)
	}
	return err
}

// pageCommand is the command that lists the page after cursor: words,
// then --limit and --cursor; "" when there is no next page (no cursor).
func pageCommand(cursor string, limit int, words ...string) string {
	if cursor == "" {
		return ""
	}
	return quoteArgs(append(words, "--limit", strconv.Itoa(limit), "--cursor", cursor))
}

// quoteArgs is args as a shell would need them, for a suggested command.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
