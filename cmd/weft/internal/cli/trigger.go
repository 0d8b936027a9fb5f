package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/weftrun/weft/pkg/api"
)

// TriggerCommands are the subcommands of `weft trigger`.
func TriggerCommands() map[string]Command {
	return map[string]Command{
		"create": {"create an event trigger: each event starts a run of a plan file", triggerCreate},
		"ls":     {"list triggers", listCommand("trigger", (*cliClient).ListTriggers, printTriggerList)},
		"rm":     {"delete a trigger (its runs go on)", removeCommand("trigger", (*cliClient).DeleteTrigger)},
		"send":   {"send an event to a trigger; a repeated event id starts nothing", triggerSend},
	}
}

const triggerCreateSynopsis = "weft trigger create -f PLAN_FILE [--id ID] [--input EXPR] [--priority 1-5] [-o json]"

// triggerHelp explains what a run's input is.
const triggerHelp = `Each event starts a run whose input is the event's payload. With --input,
it is instead the JSON value of EXPR, a CEL expression over event
({id, triggerId, payload}), checked when the trigger is created; an event
it fails on is refused and starts nothing. Quote it for the shell:
--input '{"orderId": event.payload.order.id}'. docs/schedules.md.
`

// triggerCreate is `weft trigger create`.
func triggerCreate(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "trigger create", triggerCreateSynopsis, triggerHelp)
	var req api.TriggerRequest
	var file string
	addPlanFileFlag(cmd.flags, &file)
	cmd.StringVar(&req.TriggerID, "id", "", "the trigger's id, also its NATS subject token (default: a fresh id)")
	cmd.StringVar(&req.Input, "input", "", "a CEL expression over event whose value is each run's input (default: the event's payload)")
	cmd.IntVar(&req.Priority, "priority", 0, "the admission priority of every run it starts, 1 (lowest) to 5 (default 3)")
	where := addWhereFlags(cmd.flags, "")
	_, err := cmd.parse(args)
	if err != nil {
		return err
	}
	if file == "" {
		return fmt.Errorf("pass -f PLAN_FILE\nusage: %s", triggerCreateSynopsis)
	}
	if _, req.Plan, err = readPlanFile(file); err != nil {
		return err
	}
	req.TenantID, req.ProjectID, req.EnvironmentID = where.ids()
	return callAPI(cmd, "create a trigger of "+file, func(c *cliClient) (*api.Trigger, error) {
		return c.CreateTrigger(ctx, req)
	}, func(w io.Writer, tr *api.Trigger) error {
		input := "the event's payload"
		if tr.Input != "" {
			input = tr.Input
		}
		_, err := fmt.Fprintf(w, "Trigger %s starts plan %s %s per event, with input %s.\nSend one: weft trigger send %s --event-id ID --payload JSON\n",
			tr.TriggerID, tr.PlanID, tr.PlanVersion, input, tr.TriggerID)
		return err
	})
}

// printTriggerList writes one line per trigger, and the command that lists
// the next page of limit triggers, if there is one.
func printTriggerList(w io.Writer, list *api.TriggerList, limit int) error {
	tw := newTable(w)
	tw.row("TRIGGER\tPLAN\tWHERE\tCREATED\n")
	for _, tr := range list.Triggers {
		tw.row("%s\t%s %s\t%s/%s/%s\t%s\n", tr.TriggerID, tr.PlanID, tr.PlanVersion, tr.TenantID, tr.ProjectID,
			tr.EnvironmentID, tr.CreatedAt.UTC().Format(time.RFC3339))
	}
	if err := tw.flush(); err != nil {
		return err
	}
	return printListEnd(w, len(list.Triggers), "", pageCommand(list.NextCursor, limit, "weft", "trigger", "ls"))
}

const triggerSendSynopsis = "weft trigger send TRIGGER_ID [--event-id ID] [--payload JSON] [-o json]"

// triggerSend is `weft trigger send`.
func triggerSend(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "trigger send", triggerSendSynopsis, "")
	var ev api.TriggerEvent
	payload := cmd.String("payload", "", "the event, a JSON document, @FILE, or - for stdin")
	cmd.StringVar(&ev.EventID, "event-id", "", "the event's stable id: sending it again starts nothing (default: a fresh id)")
	pos, err := cmd.parse(args, "TRIGGER_ID")
	if err != nil {
		return err
	}
	if ev.Payload, err = jsonArg("--payload", *payload); err != nil {
		return err
	}
	return callAPI(cmd, "send an event to trigger "+pos[0], func(c *cliClient) (*api.TriggerEventResult, error) {
		return c.SendTriggerEvent(ctx, pos[0], ev)
	}, printTriggerEvent)
}

// printTriggerEvent says which run an event started, or that it started
// none because it repeated an earlier one.
func printTriggerEvent(w io.Writer, res *api.TriggerEventResult) error {
	if res.Duplicate {
		_, err := fmt.Fprintf(w, "Event %s already started run %s (status %s); nothing new was started.\n",
			res.EventID, res.RunID, res.Status)
		return err
	}
	_, err := fmt.Fprintf(w, "Event %s started run %s.\nFollow it: weft run watch %s\n", res.EventID, res.RunID, res.RunID)
	return err
}
