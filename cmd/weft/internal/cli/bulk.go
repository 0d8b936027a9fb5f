package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/weftrun/weft/pkg/api"
)

// bulkActions are the subcommands of `weft runs` that start a bulk job,
// by the action each takes (docs/api.md, "Bulk operations").
var bulkActions = []struct{ name, action, summary string }{
	{"cancel", api.BulkCancel, "cancel every run a filter matches, as a bulk job (skips the ended ones)"},
	{"pause", api.BulkPause, "pause every RUNNING run a filter matches, as a bulk job"},
	{"resume", api.BulkResume, "resume every PAUSED run a filter matches, as a bulk job"},
	{"retry-failed", api.BulkRetryFailedSteps, "retry the failed steps of every FAILED run a filter matches, as a bulk job"},
	{"rerun-failed", api.BulkRerun, "rerun every FAILED run a filter matches from its first failed step, as a bulk job"},
}

// bulkRunsCommands are the bulk subcommands of `weft runs`.
func bulkRunsCommands() map[string]Command {
	cmds := make(map[string]Command, len(bulkActions))
	for _, a := range bulkActions {
		cmds[a.name] = Command{a.summary, func(ctx context.Context, env *Env, args []string) error {
			return runsBulk(ctx, env, a.name, a.action, args)
		}}
	}
	return cmds
}

// BulkCommands are the subcommands of `weft bulk`.
func BulkCommands() map[string]Command {
	return map[string]Command{
		"get":    {"show a bulk job and its progress", bulkGet},
		"cancel": {"stop a bulk job: no run is acted on after the batch in flight", bulkCancel},
	}
}

// bulkHelp explains what a bulk command does and its exit codes.
const bulkHelp = `The gateway records a bulk job with the runs the filter matches now (every
filter given must match; at most 100,000 runs) and works through them in
the background, at a bounded rate, through the normal signal path: a run
whose state makes the action pointless is skipped, with the reason. The
job's id is printed first: follow it with weft bulk get ID, stop it with
weft bulk cancel ID. Repeating the command with the same --bulk-id follows
the same job and acts on no run twice.

A filter with no field at all would act on every run of the tenant: it is
refused unless --yes.

Unless --no-wait, the command follows the job until it ends, with its
progress on stderr (a bar on a terminal, plain lines elsewhere).

Exit codes:
  0    the job is DONE and no run failed (or it was started, with --no-wait)
  1    bad usage or input, an API or network error
  2    the job is DONE, and the action failed on some runs
  3    the job was CANCELLED
  130  interrupted (Ctrl-C) while following: the job goes on
`

// runsBulk is `weft runs NAME`: a bulk job taking action on the runs its
// filter flags match, followed to its end unless --no-wait.
func runsBulk(ctx context.Context, env *Env, name, action string, args []string) error {
	synopsis := "weft runs " + name + " [--label K=V…] [--status S[,S…]] [--plan PLAN_ID [--plan-version V]] [--parent RUN_ID] " +
		"[--bulk-id ID] [--yes] [--no-wait] [-o json]"
	cmd := newAPICommand(env, "runs "+name, synopsis, bulkHelp)
	req := api.BulkRequest{Action: action}
	var statuses statusList
	var labels labelFlags
	cmd.Var(&labels, "label", "act on runs that carry this label, KEY=VALUE; repeatable: runs that carry every one")
	cmd.Var(&statuses, "status", "act on runs of these statuses; repeatable or comma-separated")
	cmd.StringVar(&req.Filter.PlanID, "plan", "", "act on runs of this plan id")
	cmd.StringVar(&req.Filter.PlanVersion, "plan-version", "", "with --plan: act on runs of this version of it")
	cmd.StringVar(&req.Filter.Parent, "parent", "", "act on the child runs of this run")
	cmd.StringVar(&req.BulkID, "bulk-id", "", "your id for the job: repeating it follows the same job (default: a fresh id)")
	yes := cmd.Bool("yes", false, "act even though no filter is given: on every run of the tenant")
	noWait := cmd.Bool("no-wait", false, "print the job's id and exit, without following it")
	if _, err := cmd.parse(args); err != nil {
		return err
	}
	req.Filter.Status, req.Filter.Labels = statuses, labels
	if err := checkBulkFilter(req.Filter, *yes, synopsis); err != nil {
		return err
	}
	return cmd.withClient(func(c *cliClient) error {
		job, created, err := c.StartBulk(ctx, req)
		if err != nil {
			return c.explain(fmt.Errorf("start bulk job %s: %w", action, err))
		}
		if *noWait {
			return printAs(env.Stdout, cmd.format, job, func(w io.Writer, job *api.BulkJob) error {
				return printBulkStarted(w, job, created)
			})
		}
		startOut := env.Stdout
		if cmd.format == outputJSON { // under -o json, stdout carries the final job alone
			startOut = env.Stderr
		}
		if err := printBulkStarted(startOut, job, created); err != nil {
			return err
		}
		return followBulk(ctx, env, c, job, cmd.format)
	})
}

// checkBulkFilter refuses a --plan-version without --plan, and a filter
// with no field at all unless yes.
func checkBulkFilter(f api.BulkFilter, yes bool, synopsis string) error {
	switch {
	case f.PlanVersion != "" && f.PlanID == "":
		return fmt.Errorf("--plan-version needs --plan: a version is of one plan\nusage: %s", synopsis)
	case !yes && len(f.Status) == 0 && len(f.Labels) == 0 && f.PlanID == "" && f.Parent == "":
		return fmt.Errorf("no filter: this would act on every run of the tenant; narrow it (--label, --status, --plan, --parent) or pass --yes\nusage: %s", synopsis)
	}
	return nil
}

// printBulkStarted says which job started (or was found again, for a
// repeat of its bulkId) and how to follow or stop it.
func printBulkStarted(w io.Writer, job *api.BulkJob, created bool) error {
	verb := "Started"
	if !created {
		verb = "Found the earlier"
	}
	_, err := fmt.Fprintf(w, "%s bulk job %s: %s on %d matching runs.\nFollow it: weft bulk get %s\nStop it: weft bulk cancel %s\n",
		verb, job.BulkID, job.Action, job.Matched, job.BulkID, job.BulkID)
	return err
}

// bulkGet is `weft bulk get BULK_ID`.
func bulkGet(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "bulk get", "weft bulk get BULK_ID [-o json]", "")
	pos, err := cmd.parse(args, "BULK_ID")
	if err != nil {
		return err
	}
	return callAPI(cmd, "get bulk job "+pos[0], func(c *cliClient) (*api.BulkJob, error) {
		return c.GetBulk(ctx, pos[0])
	}, printBulkJob)
}

// bulkCancel is `weft bulk cancel BULK_ID`.
func bulkCancel(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "bulk cancel", "weft bulk cancel BULK_ID [-o json]",
		"What the job did stays done; cancelling a job that has ended changes nothing.\n")
	pos, err := cmd.parse(args, "BULK_ID")
	if err != nil {
		return err
	}
	return callAPI(cmd, "cancel bulk job "+pos[0], func(c *cliClient) (*api.BulkJob, error) {
		return c.CancelBulk(ctx, pos[0])
	}, printBulkJob)
}

// printBulkJob prints a job and its progress for people.
func printBulkJob(w io.Writer, job *api.BulkJob) error {
	t := newTable(w)
	t.row("Bulk job\t%s\n", job.BulkID)
	t.row("Action\t%s\n", job.Action)
	t.row("Filter\t%s\n", filterText(job.Filter))
	t.row("Status\t%s\n", job.Status)
	t.row("Matched\t%d\n", job.Matched)
	t.row("Done\t%d\n", job.Done)
	t.row("Skipped\t%s\n", skippedText(job))
	t.row("Failed\t%d\n", job.Failed)
	t.row("Created\t%s\n", job.CreatedAt.Local().Format("2006-01-02 15:04:05"))
	if job.EndedAt != nil {
		t.row("Ended\t%s\n", job.EndedAt.Local().Format("2006-01-02 15:04:05"))
	}
	return t.flush()
}

// filterText is a filter as the flags that make it, for people:
// "--label team=a --status RUNNING"; "(none: every run)" when empty.
func filterText(f api.BulkFilter) string {
	var parts []string
	for _, kv := range [][2]string{{"--status", strings.Join(f.Status, ",")}, {"--plan", f.PlanID},
		{"--plan-version", f.PlanVersion}, {"--parent", f.Parent}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if len(f.Labels) > 0 {
		parts = append(parts, "--label "+strings.ReplaceAll(formatLabels(f.Labels), ",", " --label "))
	}
	if len(parts) == 0 {
		return "(none: every run)"
	}
	return strings.Join(parts, " ")
}
