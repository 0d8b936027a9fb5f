package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// RunCommands are the subcommands of `weft run`.
func RunCommands() map[string]Command {
	return map[string]Command{
		"start":  {"start a run of a plan file, and with --wait follow it to its end", runStart},
		"rerun":  {"start a new run of a run from one of its steps, copying the other steps' outcomes", runRerun},
		"get":    {"show a run: its status and each step's", runGet},
		"watch":  {"follow a run's progress until it ends; exit with its outcome", runWatch},
		"events": {"list a run's events from the event log", runEvents},
	}
}

const startSynopsis = "weft run start (-f PLAN_FILE | --plan PLAN_ID[@VERSION]) [--input JSON] [--label K=V…] [--priority 1-5] [--wait [--timeout D]] [--run-request-id ID] [-o json]"

// runStart is `weft run start`.
func runStart(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "run start", startSynopsis, exitCodesHelp)
	var sf startFlags
	addPlanFileFlag(cmd.flags, &sf.file)
	cmd.Lookup("f").Usage = "the plan file, YAML or JSON (or --plan)"
	cmd.StringVar(&sf.planRef, "plan", "", "start a registered plan (weft plan push) instead of a file: PLAN_ID@VERSION, or PLAN_ID or PLAN_ID@latest for its newest version not archived")
	cmd.StringVar(&sf.input, "input", "", "the run's input, a JSON document, @FILE, or - for stdin")
	cmd.StringVar(&sf.runRequestID, "run-request-id", "", "your id for this start: repeating it starts no second run (default: a fresh id)")
	cmd.Var(&sf.labels, "label", "a label of the run, KEY=VALUE; repeatable")
	cmd.IntVar(&sf.priority, "priority", 0, "the run's admission priority, 1 (lowest) to 5: queued runs start higher ones first (default 3)")
	wait := cmd.Bool("wait", false, "follow the run's progress until it ends, and exit with its outcome")
	timeout := cmd.Duration("timeout", 0, "with --wait: stop waiting after this long and exit 4 (default: wait as long as the run takes)")
	sf.where = addWhereFlags(cmd.flags, " of the run")
	if _, err := cmd.parse(args); err != nil {
		return err
	}
	req, err := sf.request()
	if err != nil {
		return err
	}
	return cmd.withClient(func(c *cliClient) error {
		res, err := c.StartRun(ctx, req)
		if err != nil {
			return c.explain(fmt.Errorf("start a run of %s: %w", sf.what(), err))
		}
		if !*wait {
			return printStarted(env.Stdout, cmd.format, req, res, false)
		}
		if cmd.format == outputText { // under -o json, stdout carries the final view alone
			if err := printStarted(env.Stdout, cmd.format, req, res, true); err != nil {
				return err
			}
		}
		return watchToEnd(ctx, env, c, res.RunID, nil, cmd.format, *timeout)
	})
}

// Defaults of the identity of what `weft run start`, `schedule create` and
// `trigger create` make: the dev stack's. defaultTenant is the tenant of
// weft dev's token (cmd/weft's devTenant): the tests that drive the CLI
// against the dev stack start runs without --tenant, which the gateway
// refuses for another tenant.
const (
	defaultTenant      = "default"
	defaultProject     = "default"
	defaultEnvironment = "dev"
)

// startFlags are the flags of `weft run start` that make its request.
type startFlags struct {
	file, planRef, input, runRequestID string
	labels                             labelFlags
	priority                           int
	where                              whereFlags
}

// what names the plan the start is of: its file, or its reference.
func (sf startFlags) what() string { return cmp.Or(sf.file, sf.planRef) }

// request reads and checks the plan file, or the reference --plan gives,
// and the input, and builds the start request: a file's plan is sent as
// JSON, whatever its format; a reference without a version names the
// latest.
func (sf startFlags) request() (api.StartRunRequest, error) {
	req := api.StartRunRequest{RunRequestID: sf.runRequestID}
	switch {
	case sf.file != "" && sf.planRef != "":
		return req, fmt.Errorf("pass -f PLAN_FILE or --plan PLAN_ID[@VERSION], not both\nusage: %s", startSynopsis)
	case sf.planRef != "":
		planID, version := splitPlanRef(sf.planRef)
		if planID == "" {
			return req, fmt.Errorf("--plan %q names no plan: want PLAN_ID[@VERSION]", sf.planRef)
		}
		req.PlanRef = &api.PlanRef{PlanID: planID, PlanVersion: cmp.Or(version, api.PlanVersionLatest)}
	case sf.file != "":
		p, doc, err := readPlanFile(sf.file)
		if err != nil {
			return req, err
		}
		req.PlanID, req.PlanVersion, req.Plan = p.PlanID, p.PlanVersion, doc
	default:
		return req, fmt.Errorf("no plan: pass -f PLAN_FILE (a YAML or JSON plan; see examples/) or --plan PLAN_ID[@VERSION] (a registered plan)\nusage: %s", startSynopsis)
	}
	input, err := jsonArg("--input", sf.input)
	if err != nil {
		return req, err
	}
	req.Input, req.Labels, req.Priority = input, sf.labels, sf.priority
	req.TenantID, req.ProjectID, req.EnvironmentID = sf.where.ids()
	return req, nil
}

// readPlanFile reads and checks a plan file, YAML or JSON, and returns
// the plan and its JSON document, which is what the gateway is sent.
func readPlanFile(file string) (*plan.Plan, json.RawMessage, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("read the plan: %w", err)
	}
	p, err := plan.Parse(data, plan.Limits{})
	if err != nil {
		return nil, nil, planError(file, err)
	}
	doc, err := json.Marshal(p)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the plan: %w", err)
	}
	return p, doc, nil
}

// planError lists a plan's problems, one per line.
func planError(file string, err error) error {
	var ve *plan.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		return fmt.Errorf("%s is not a valid plan: %w", file, err)
	}
	msg := file + " is not a valid plan:"
	for _, p := range ve.Problems {
		msg += "\n  " + p.String() + " (" + p.Code + ")"
	}
	return errors.New(msg)
}

// maxJSONArgBytes bounds a JSON document read from a file or stdin for a
// flag; the gateway applies its own, smaller limits.
const maxJSONArgBytes = 32 << 20

// jsonArg returns a flag's JSON document: value itself, or, for "@PATH",
// the file's contents, or, for "-", standard input's; nil for "". It fails
// unless the document is JSON.
func jsonArg(flagName, value string) (json.RawMessage, error) {
	return jsonArgFrom(flagName, value, os.Stdin)
}

// jsonArgFrom is jsonArg reading "-" from stdin.
func jsonArgFrom(flagName, value string, stdin io.Reader) (json.RawMessage, error) {
	doc, from := []byte(value), ""
	switch {
	case value == "":
		return nil, nil
	case value == "-":
		from = "standard input"
		b, err := io.ReadAll(io.LimitReader(stdin, maxJSONArgBytes+1))
		if err != nil {
			return nil, fmt.Errorf("%s -: read standard input: %w", flagName, err)
		}
		doc = b
	case strings.HasPrefix(value, "@"):
		from = value[1:]
		b, err := readLimited(from, maxJSONArgBytes)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, value, err)
		}
		doc = b
	}
	if len(doc) > maxJSONArgBytes {
		return nil, fmt.Errorf("%s: %s holds more than %d bytes", flagName, from, maxJSONArgBytes)
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		if from != "" {
			return nil, fmt.Errorf("%s: %s is not JSON: %w", flagName, from, err)
		}
		return nil, fmt.Errorf("%s is not JSON: %w (quote it for the shell: %s '{\"key\": \"value\"}', or pass @FILE or - for stdin)", flagName, err, flagName)
	}
	return json.RawMessage(doc), nil
}

// readLimited reads the file at path, failing when it holds more than max
// bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the file holds more than %d bytes", limit)
	}
	return b, nil
}

// printStarted reports a start; unless waiting, it says how to follow the
// run.
func printStarted(w io.Writer, format outputFormat, req api.StartRunRequest, res *api.StartRunResult, waiting bool) error {
	return printAs(w, format, res, func(w io.Writer, res *api.StartRunResult) error {
		var err error
		if res.Duplicate {
			err = printDuplicateStart(w, res)
		} else {
			_, err = fmt.Fprintf(w, "Started run %s of %s.\n", res.RunID, startedPlan(req))
		}
		if err == nil && !waiting {
			_, err = fmt.Fprintf(w, "Follow it: weft run watch %s\n", res.RunID)
		}
		return err
	})
}

// printDuplicateStart says that res repeats an earlier start (or rerun)
// and started nothing.
func printDuplicateStart(w io.Writer, res *api.StartRunResult) error {
	_, err := fmt.Fprintf(w, "Run %s was already started for run request %s (status %s); nothing new was started.\n",
		res.RunID, res.RunRequestID, res.Status)
	return err
}

// startedPlan names the plan of a start for people: "plan hello 1", or
// "registered plan hello@latest" for a start by reference.
func startedPlan(req api.StartRunRequest) string {
	if r := req.PlanRef; r != nil {
		return "registered plan " + r.PlanID + "@" + r.PlanVersion
	}
	return "plan " + req.PlanID + " " + req.PlanVersion
}

const getSynopsis = "weft run get RUN_ID [-o json]"

// runGet is `weft run get`: the run's view, and each step's input,
// output and attempts (readRunDetail).
func runGet(ctx context.Context, env *Env, args []string) error {
	return withRun(env, "run get", getSynopsis, "", args, func(c *cliClient, format outputFormat, runID string) error {
		d, err := readRunDetail(ctx, c, runID, format)
		if err != nil {
			return err
		}
		return printAs(env.Stdout, format, d, printRunDetailNow)
	})
}

// readRunDetail reads what `weft run get` shows in format. For people: the
// run's top-level steps (client.TopSteps) and the detail of each step it
// has a row for, one request per row, so neither a forEach step's
// children nor the run's log is read. -o json carries every step's
// detail, each child's too: it reads the whole view and the run's events
// (events.StepDetails), which costs a forEach run of N elements a page
// per thousand events rather than a request per child.
func readRunDetail(ctx context.Context, c *cliClient, runID string, format outputFormat) (runDetail, error) {
	if format == outputJSON {
		v, err := getRun(ctx, c, runID, client.AllSteps())
		if err != nil {
			return runDetail{}, err
		}
		page, err := allEvents(ctx, c, runID, 0)
		if err != nil {
			return runDetail{}, err
		}
		details, err := events.StepDetails(page.Events)
		if err != nil {
			return runDetail{}, fmt.Errorf("steps of run %s: %w", runID, err)
		}
		return runDetail{RunView: v, StepDetails: details}, nil
	}
	v, err := getRun(ctx, c, runID, client.TopSteps())
	if err != nil {
		return runDetail{}, err
	}
	rows := stepRows(v)
	details := make(map[string]*events.StepDetail, len(rows))
	for _, r := range rows {
		d, err := c.Step(ctx, runID, r.id)
		if err != nil {
			return runDetail{}, c.explain(fmt.Errorf("step %s of run %s: %w", r.id, runID, err))
		}
		details[r.id] = d
	}
	return runDetail{RunView: v, StepDetails: details}, nil
}

// getRun reads a run, saying plainly when there is none.
func getRun(ctx context.Context, c *cliClient, runID string, opts ...client.GetRunOption) (*api.RunView, error) {
	v, err := c.GetRun(ctx, runID, opts...)
	if client.IsCode(err, api.CodeNotFound) {
		return nil, fmt.Errorf("no run %s: the read API at %s does not know it (a run appears there a moment after it starts)", runID, c.readURL)
	}
	if err != nil {
		return nil, c.explain(fmt.Errorf("get run %s: %w", runID, err))
	}
	return v, nil
}

// withRun parses the flags of a command that takes one run id, builds the
// client and calls do. extra adds the command's own flags.
func withRun(env *Env, name, synopsis, footer string, args []string,
	do func(c *cliClient, format outputFormat, runID string) error, extra ...func(*flags)) error {
	cmd := newAPICommand(env, name, synopsis, footer)
	for _, add := range extra {
		add(cmd.flags)
	}
	pos, err := cmd.parse(args, "RUN_ID")
	if err != nil {
		return err
	}
	return cmd.withClient(func(c *cliClient) error { return do(c, cmd.format, pos[0]) })
}

const watchSynopsis = "weft run watch RUN_ID [--timeout D] [-o json]"

// runWatch is `weft run watch`.
func runWatch(ctx context.Context, env *Env, args []string) error {
	var timeout time.Duration
	return withRun(env, "run watch", watchSynopsis, exitCodesHelp, args, func(c *cliClient, format outputFormat, runID string) error {
		v, err := getRun(ctx, c, runID)
		if err != nil {
			return err
		}
		return watchToEnd(ctx, env, c, runID, v, format, timeout)
	}, func(f *flags) {
		f.DurationVar(&timeout, "timeout", 0, "stop waiting after this long and exit 4 (default: wait as long as the run takes)")
	})
}

// watchToEnd follows the run to its end, showing its progress (on stdout,
// or stderr when stdout carries JSON), then prints its last view and
// returns the error that gives the outcome's exit code.
func watchToEnd(ctx context.Context, env *Env, c *cliClient, runID string, first *api.RunView,
	format outputFormat, timeout time.Duration) error {
	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		waitCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	progressOut := env.Stdout
	if format == outputJSON {
		progressOut = env.Stderr
	}
	p := newProgress(progressOut, env.Getenv("COLUMNS"))
	v, err := follow(waitCtx, c.Client, runID, first, p)
	p.finish()
	if v != nil {
		if perr := printFinal(env.Stdout, format, v); perr != nil {
			return perr
		}
	}
	switch {
	case err == nil:
		return outcome(v)
	case ctx.Err() != nil:
		return &codeError{code: ExitInterrupt, err: fmt.Errorf("interrupted while waiting for run %s; the run goes on (weft run watch %s)", runID, runID)}
	case waitCtx.Err() != nil:
		return &codeError{code: ExitTimeout, err: fmt.Errorf("run %s did not end within --timeout %s; it goes on (weft run watch %s)", runID, timeout, runID)}
	default:
		return c.explain(fmt.Errorf("follow run %s: %w", runID, err))
	}
}

// printFinal prints the run's view once the wait is over.
func printFinal(w io.Writer, format outputFormat, v *api.RunView) error {
	return printAs(w, format, v, func(w io.Writer, v *api.RunView) error {
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
		return printRunNow(w, v)
	})
}

// outcome is nil for a COMPLETED run and the *codeError of its exit code
// for any other.
func outcome(v *api.RunView) error {
	switch v.Status {
	case events.RunStatusCompleted:
		return nil
	case events.RunStatusFailed:
		why := ""
		if v.Error != nil {
			why = ": " + stepErrorText(v.Error)
		}
		return &codeError{code: ExitFailed, err: fmt.Errorf("run %s FAILED%s", v.RunID, why)}
	case events.RunStatusCancelled:
		return &codeError{code: ExitCancelled, err: fmt.Errorf("run %s was CANCELLED", v.RunID)}
	default:
		return fmt.Errorf("run %s is %s, not ended", v.RunID, v.Status)
	}
}

const eventsSynopsis = "weft run events RUN_ID [--after-seq N] [-o json]"

// runEvents is `weft run events`: every event of the run after --after-seq,
// read page by page.
func runEvents(ctx context.Context, env *Env, args []string) error {
	var after int64
	return withRun(env, "run events", eventsSynopsis, "", args, func(c *cliClient, format outputFormat, runID string) error {
		page, err := allEvents(ctx, c, runID, after)
		if err != nil {
			return err
		}
		return printAs(env.Stdout, format, page, func(w io.Writer, page *api.EventPage) error {
			return printEvents(w, page.Events)
		})
	}, func(f *flags) {
		f.Int64Var(&after, "after-seq", 0, "list the events after this runSeq")
	})
}

// allEvents reads the run's events after runSeq after, every page, into
// one page.
func allEvents(ctx context.Context, c *cliClient, runID string, after int64) (*api.EventPage, error) {
	all := &api.EventPage{Events: []events.Event{}, NextAfterSeq: after}
	for {
		page, err := c.RunEvents(ctx, runID, all.NextAfterSeq, 1000)
		if client.IsCode(err, api.CodeNotFound) {
			return nil, fmt.Errorf("no run %s: the read API at %s does not know it", runID, c.readURL)
		}
		if err != nil {
			return nil, c.explain(fmt.Errorf("events of run %s: %w", runID, err))
		}
		all.Events = append(all.Events, page.Events...)
		all.NextAfterSeq = page.NextAfterSeq
		if !page.More {
			return all, nil
		}
	}
}
