package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// runsSubcommands are the subcommands of `weft runs`.
func runsSubcommands() map[string]command {
	return map[string]command{
		"ls": {"list runs, newest first", runsList},
	}
}

const lsSynopsis = "weft runs ls [--status S[,S…]] [--plan PLAN_ID] [--limit N] [--cursor C] [-o json]"

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
func runsList(ctx context.Context, env *environment, args []string) error {
	cmd := newAPICommand(env, "runs ls", lsSynopsis, "")
	var filter client.RunFilter
	var statuses statusList
	cmd.Var(&statuses, "status", "keep runs of these statuses: PENDING APPROVED RUNNING PAUSED COMPLETED FAILED CANCELLED, or STALE; repeatable or comma-separated")
	cmd.StringVar(&filter.PlanID, "plan", "", "keep runs of this plan id")
	addPageFlags(cmd.flags, "runs", 20, &filter.Limit, &filter.Cursor)
	if _, err := cmd.parse(args); err != nil {
		return err
	}
	filter.Status = statuses
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
	if f.PlanID != "" {
		next = append(next, "--plan", f.PlanID)
	}
	return pageCommand(cursor, f.Limit, next...)
}

const signalSynopsis = "weft signal RUN_ID NAME [--payload JSON] [--signal-id ID] [-o json]"

// signalHelp explains the signal names.
const signalHelp = `NAME is PAUSE, RESUME, CANCEL, RETRY_STEP (payload {"stepId": "…"}), or the
signal a waitSignal step of the run waits for (its payload becomes the
step's output). A signal for a waitSignal step applies only while the step
waits: check with 'weft run get RUN_ID' that it is RUNNING first.
`

// runSignal is `weft signal`: send a signal to a run through the gateway.
func runSignal(ctx context.Context, env *environment, args []string) error {
	cmd := newAPICommand(env, "signal", signalSynopsis, signalHelp)
	var req api.SignalRequest
	payload := cmd.String("payload", "", "the signal's payload, a JSON document, @FILE, or - for stdin")
	cmd.StringVar(&req.SignalID, "signal-id", "", "your id for this signal: repeating it sends it once (default: a fresh id)")
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
		if client.IsCode(err, api.CodeNotFound) {
			return fmt.Errorf("no run %s: the gateway at %s does not know it", runID, c.apiURL)
		}
		if err != nil {
			return c.explain(fmt.Errorf("signal %s to run %s: %w", req.SignalName, runID, err))
		}
		return printAs(env.stdout, cmd.format, res, func(w io.Writer, res *api.AcceptedSignalResult) error {
			_, err := fmt.Fprintf(w, "Signal %s accepted for run %s (signal id %s).\n", res.SignalName, res.WorkflowID, res.SignalID)
			return err
		})
	})
}
