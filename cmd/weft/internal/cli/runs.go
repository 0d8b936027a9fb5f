package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
)

// RunsCommands are the subcommands of `weft runs`: ls, and the bulk
// actions (cancel, pause, resume, retry-failed, rerun-failed).
func RunsCommands() map[string]Command {
	cmds := bulkRunsCommands()
	cmds["ls"] = Command{"list runs, newest first", runsList}
	return cmds
}

const lsSynopsis = "weft runs ls [--status S[,S…]] [--plan PLAN_ID [--plan-version V]] [--label K=V…] [--trigger ID] [--schedule ID] " +
	"[--parent RUN_ID] [--rerun-of RUN_ID] [--queued-key KEY] [--created-after T] [--created-before T] [--ended-after T] [--ended-before T] " +
	"[--project ID] [--environment ID] [--limit N] [--cursor C] [-o json]"

// statusList is a flag that may be repeated and holds comma-separated
// values: --status FAILED,CANCELLED --status STALE.
type statusList []string

func (s *statusList) String() string { return strings.Join(*s, ",") }

func (s *statusList) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.ToUpper(strings.TrimSpace(part)); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

// runsList is `weft runs ls`: one page of runs.
func runsList(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "runs ls", lsSynopsis, "")
	var filter client.RunFilter
	var statuses statusList
	var labels labelFlags
	cmd.Var(&statuses, "status", "keep runs of these statuses: PENDING APPROVED QUEUED RUNNING PAUSED COMPLETED FAILED CANCELLED, or STALE; repeatable or comma-separated")
	cmd.StringVar(&filter.PlanID, "plan", "", "keep runs of this plan id")
	cmd.StringVar(&filter.ParentRunID, "parent", "", "keep the child runs the subPlan steps of this run started")
	addListFilterFlags(cmd, &filter, &labels)
	cmd.StringVar(&filter.ProjectID, "project", "", "keep runs of this project id")
	cmd.StringVar(&filter.EnvironmentID, "environment", "", "keep runs of this environment id")
	addPageFlags(cmd.flags, "runs", 20, &filter.Limit, &filter.Cursor)
	if _, err := cmd.parse(args); err != nil {
		return err
	}
	filter.Status, filter.Labels = statuses, labels
	return callAPI(cmd, "list runs", func(c *cliClient) (*api.RunList, error) {
		list, err := c.ListRuns(ctx, filter)
		if list != nil && list.Runs == nil {
			list.Runs = []api.RunSummary{} // -o json lists no runs as [], not null
		}
		return list, err
	}, func(w io.Writer, list *api.RunList) error {
		return printRunList(w, list, nextPageCommand(filter, list.NextCursor))
	})
}

// nextPageCommand is the command that lists the page after this one, with
// the same filter; "" on the last page.
func nextPageCommand(f client.RunFilter, cursor string) string {
	next := []string{"weft", "runs", "ls"}
	if len(f.Status) > 0 {
		next = append(next, "--status", strings.Join(f.Status, ","))
	}
	for _, kv := range [][2]string{{"--plan", f.PlanID}, {"--plan-version", f.PlanVersion}, {"--trigger", f.TriggerID},
		{"--schedule", f.ScheduleID}, {"--parent", f.ParentRunID}, {"--rerun-of", f.RerunOf}, {"--queued-key", f.QueuedKey}, {"--project", f.ProjectID},
		{"--environment", f.EnvironmentID}} {
		if kv[1] != "" {
			next = append(next, kv[0], kv[1])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
		next = append(next, "--label", k+"="+f.Labels[k])
	}
	for _, kv := range []struct {
		flag string
		at   time.Time
	}{{"--created-after", f.CreatedAfter}, {"--created-before", f.CreatedBefore}, {"--ended-after", f.EndedAfter}, {"--ended-before", f.EndedBefore}} {
		if !kv.at.IsZero() {
			next = append(next, kv.flag, kv.at.Format(time.RFC3339Nano))
		}
	}
	return pageCommand(cursor, f.Limit, next...)
}

// addListFilterFlags adds to cmd the flags of `weft runs ls` that filter
// by plan version, label, source, rerun and time range, into f and
// labels.
func addListFilterFlags(cmd *apiCommand, f *client.RunFilter, labels *labelFlags) {
	cmd.StringVar(&f.PlanVersion, "plan-version", "", "with --plan: keep runs of this version of it")
	cmd.Var(labels, "label", "keep runs that carry this label, KEY=VALUE; repeatable: runs that carry every one")
	cmd.StringVar(&f.TriggerID, "trigger", "", "keep the runs this trigger's events started")
	cmd.StringVar(&f.ScheduleID, "schedule", "", "keep the runs this schedule's fires started")
	cmd.StringVar(&f.RerunOf, "rerun-of", "", "keep the reruns of this run")
	cmd.StringVar(&f.QueuedKey, "queued-key", "", `keep the QUEUED runs this concurrency key holds, as weft run get names it: 'input.customerId = "42"'`)
	for _, t := range []struct {
		name, usage string
		at          *time.Time
	}{
		{"created-after", "keep runs created at or after this RFC 3339 time", &f.CreatedAfter},
		{"created-before", "keep runs created before this RFC 3339 time", &f.CreatedBefore},
		{"ended-after", "keep runs that ended at or after this RFC 3339 time", &f.EndedAfter},
		{"ended-before", "keep runs that ended before this RFC 3339 time", &f.EndedBefore},
	} {
		cmd.Var(timeFlag{t.at}, t.name, t.usage)
	}
}

const signalSynopsis = "weft signal RUN_ID NAME [--payload JSON] [--signal-id ID] [--no-wait | --timeout D] [-o json]"

// signalHelp explains the signal names and what the command waits for.
const signalHelp = `NAME is PAUSE, RESUME, CANCEL, RETRY_STEP (payload {"stepId": "…"}), or the
signal a waitSignal step of the run waits for (its payload becomes the
step's output). The gateway refuses a name the run has no use for (it
lists those it takes), a RETRY_STEP of a step the plan does not have, and
any signal to a run that has ended (but RETRY_STEP on a FAILED run).

Once the signal is accepted, the command waits for the engine's verdict
and prints it: applied, buffered (kept for a waitSignal step that does not
wait yet) or ignored, with the reason (PAUSE of a run that is not RUNNING,
RETRY_STEP of a step that is not FAILED, ...). An ignored signal exits 1.
--no-wait prints the acceptance alone and exits 0.
`

// signalWaitDefault bounds the wait for a signal's verdict: the engine
// decides an accepted signal within its next round, so this long without
// one means the engine is not running.
const signalWaitDefault = time.Minute

// signalAnswer is what `weft signal -o json` prints: the gateway's
// acceptance, and the engine's verdict once it has come (absent with
// --no-wait).
type signalAnswer struct {
	*api.AcceptedSignalResult
	Verdict *events.SignalAppliedData `json:"verdict,omitempty"`
}

// Signal is `weft signal`: send a signal to a run through the gateway
// and, unless --no-wait, wait for the engine's verdict on it.
func Signal(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "signal", signalSynopsis, signalHelp)
	var req api.SignalRequest
	payload := cmd.String("payload", "", "the signal's payload, a JSON document, @FILE, or - for stdin")
	cmd.StringVar(&req.SignalID, "signal-id", "", "your id for this signal: repeating it sends it once (default: a fresh id)")
	noWait := cmd.Bool("no-wait", false, "print the acceptance and exit, without waiting for the engine's verdict")
	timeout := cmd.Duration("timeout", signalWaitDefault, "stop waiting for the verdict after this long and exit 4")
	pos, err := cmd.parse(args, "RUN_ID", "NAME")
	if err != nil {
		return err
	}
	runID := pos[0]
	req.SignalName = pos[1]
	if req.Payload, err = jsonArg("--payload", *payload); err != nil {
		return err
	}
	return cmd.withClient(func(c *cliClient) error {
		res, err := c.Signal(ctx, runID, req)
		if err != nil {
			return c.explain(signalRefusal(runID, req.SignalName, c.apiURL, err))
		}
		answer := signalAnswer{AcceptedSignalResult: res}
		var waitErr error
		if !*noWait {
			answer.Verdict, waitErr = waitVerdict(ctx, c, res, *timeout)
		}
		if err := printAs(env.Stdout, cmd.format, answer, printSignalAnswer); err != nil {
			return err
		}
		return waitErr
	})
}

// signalRefusal is the error of a signal the gateway did not accept, said
// for people.
func signalRefusal(runID, name, apiURL string, err error) error {
	var e *client.Error
	switch {
	case client.IsCode(err, api.CodeNotFound):
		return fmt.Errorf("no run %s: the gateway at %s does not know it", runID, apiURL)
	case errors.Is(err, client.ErrUnknownSignal) && errors.As(err, &e):
		return fmt.Errorf("run %s takes no signal named %s (it takes %s); nothing was sent to it",
			runID, name, strings.Join(e.Accepts(), ", "))
	case errors.Is(err, client.ErrRunTerminal) && errors.As(err, &e):
		return fmt.Errorf("run %s has ended %v: it takes no more signals; nothing was sent to it", runID, e.Details["status"])
	}
	return fmt.Errorf("signal %s to run %s: %w", name, runID, err)
}

// waitVerdict waits up to timeout for the engine's verdict on the signal
// res accepted. It returns the verdict, with an error when the signal was
// ignored; or no verdict and the error that ended the wait.
func waitVerdict(ctx context.Context, c *cliClient, res *api.AcceptedSignalResult, timeout time.Duration) (*events.SignalAppliedData, error) {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := c.WaitSignal(waitCtx, res)
	var ignored *client.SignalIgnoredError
	switch {
	case errors.As(err, &ignored):
		return v, fmt.Errorf("signal %s to run %s was ignored (%s): %s", res.SignalName, res.WorkflowID, ignored.Code, ignored.Reason)
	case err != nil && ctx.Err() == nil && waitCtx.Err() != nil:
		return nil, &codeError{code: ExitTimeout, err: fmt.Errorf(
			"the engine gave no verdict on signal %s within --timeout %s: is the engine running? (weft run events %s shows the run's log)",
			res.SignalID, timeout, res.WorkflowID)}
	case err != nil:
		return nil, c.explain(fmt.Errorf("wait for the verdict on signal %s (--no-wait skips the wait): %w", res.SignalID, err))
	}
	return v, nil
}

// printSignalAnswer writes a signal's acceptance and, when it has come,
// the engine's verdict, for people.
func printSignalAnswer(w io.Writer, a signalAnswer) error {
	if _, err := fmt.Fprintf(w, "Signal %s accepted for run %s (signal id %s).\n", a.SignalName, a.WorkflowID, a.SignalID); err != nil {
		return err
	}
	v := a.Verdict
	if v == nil {
		return nil
	}
	outcome := strings.ToUpper(v.Outcome[:min(1, len(v.Outcome))]) + v.Outcome[min(1, len(v.Outcome)):]
	line := fmt.Sprintf("%s: %s", outcome, v.Reason)
	if v.Code != "" {
		line = fmt.Sprintf("%s (%s): %s", outcome, v.Code, v.Reason)
	}
	if len(v.StepIDs) > 0 {
		line += fmt.Sprintf(" [steps: %s]", strings.Join(v.StepIDs, ", "))
	}
	_, err := fmt.Fprintln(w, line+".")
	return err
}
