package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// triggerSubcommands are the subcommands of `weft trigger`.
func triggerSubcommands() map[string]command {
	return map[string]command{
		"create": {"create an event trigger: each event starts a run of a plan file", triggerCreate},
		"ls":     {"list triggers", triggerList},
		"rm":     {"delete a trigger (its runs go on)", triggerRemove},
		"send":   {"send an event to a trigger; a repeated event id starts nothing", triggerSend},
	}
}

// runTrigger is `weft trigger <subcommand>`.
func runTrigger(ctx context.Context, env *environment, args []string) error {
	return subcommand(ctx, env, "trigger", triggerSubcommands(), args)
}

const triggerCreateSynopsis = "weft trigger create -f PLAN_FILE [--id ID] [-o json]"

// triggerCreate is `weft trigger create`.
func triggerCreate(ctx context.Context, env *environment, args []string) error {
	f := newFlags("trigger create", env)
	conn := addConnFlags(f)
	var req api.TriggerRequest
	var file string
	f.StringVar(&file, "f", "", "the plan file, YAML or JSON (required)")
	f.StringVar(&file, "file", "", "the plan file (same as -f)")
	f.StringVar(&req.TriggerID, "id", "", "the trigger's id, also its NATS subject token (default: a fresh id)")
	where := addWhereFlags(f)
	f.setUsage(triggerCreateSynopsis, "")
	_, format, err := conn.parse(f, triggerCreateSynopsis, args)
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
	c, err := conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	tr, err := c.CreateTrigger(ctx, req)
	if err != nil {
		return c.explain(fmt.Errorf("create a trigger of %s: %w", file, err))
	}
	if format == outputJSON {
		return writeJSON(env.stdout, tr)
	}
	_, err = fmt.Fprintf(env.stdout, "Trigger %s starts plan %s %s per event.\nSend one: weft trigger send %s --event-id ID --payload JSON\n",
		tr.TriggerID, tr.PlanID, tr.PlanVersion, tr.TriggerID)
	return err
}

const triggerListSynopsis = "weft trigger ls [--limit N] [--cursor C] [-o json]"

// triggerList is `weft trigger ls`.
func triggerList(ctx context.Context, env *environment, args []string) error {
	f := newFlags("trigger ls", env)
	conn := addConnFlags(f)
	var p client.Page
	f.IntVar(&p.Limit, "limit", 50, "triggers per page, 1 to 200")
	f.StringVar(&p.Cursor, "cursor", "", "the page after the one that printed this cursor")
	f.setUsage(triggerListSynopsis, "")
	_, format, err := conn.parse(f, triggerListSynopsis, args)
	if err != nil {
		return err
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	list, err := c.ListTriggers(ctx, p)
	if err != nil {
		return c.explain(fmt.Errorf("list triggers: %w", err))
	}
	if format == outputJSON {
		return writeJSON(env.stdout, list)
	}
	tw := newTable(env.stdout)
	tw.row("TRIGGER\tPLAN\tWHERE\tCREATED\n")
	for _, tr := range list.Triggers {
		tw.row("%s\t%s %s\t%s/%s/%s\t%s\n", tr.TriggerID, tr.PlanID, tr.PlanVersion, tr.TenantID, tr.ProjectID,
			tr.EnvironmentID, tr.CreatedAt.UTC().Format(time.RFC3339))
	}
	if err := tw.flush(); err != nil || list.NextCursor == "" {
		return err
	}
	_, err = fmt.Fprintf(env.stdout, "More: %s\n",
		quoteArgs([]string{"weft", "trigger", "ls", "--limit", strconv.Itoa(p.Limit), "--cursor", list.NextCursor}))
	return err
}

const triggerRemoveSynopsis = "weft trigger rm TRIGGER_ID"

// triggerRemove is `weft trigger rm`.
func triggerRemove(ctx context.Context, env *environment, args []string) error {
	f := newFlags("trigger rm", env)
	conn := addConnFlags(f)
	f.setUsage(triggerRemoveSynopsis, "")
	pos, _, err := conn.parse(f, triggerRemoveSynopsis, args, "TRIGGER_ID")
	if err != nil {
		return err
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	if err := c.DeleteTrigger(ctx, pos[0]); err != nil {
		return c.explain(fmt.Errorf("delete trigger %s: %w", pos[0], err))
	}
	_, err = fmt.Fprintf(env.stdout, "Deleted trigger %s.\n", pos[0])
	return err
}

const triggerSendSynopsis = "weft trigger send TRIGGER_ID [--event-id ID] [--payload JSON] [-o json]"

// triggerSend is `weft trigger send`.
func triggerSend(ctx context.Context, env *environment, args []string) error {
	f := newFlags("trigger send", env)
	conn := addConnFlags(f)
	var ev api.TriggerEvent
	payload := f.String("payload", "", "the event, a JSON document")
	f.StringVar(&ev.EventID, "event-id", "", "the event's stable id: sending it again starts nothing (default: a fresh id)")
	f.setUsage(triggerSendSynopsis, "")
	pos, format, err := conn.parse(f, triggerSendSynopsis, args, "TRIGGER_ID")
	if err != nil {
		return err
	}
	if *payload != "" {
		if ev.Payload, err = jsonArg("--payload", *payload); err != nil {
			return err
		}
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	res, err := c.SendTriggerEvent(ctx, pos[0], ev)
	if err != nil {
		return c.explain(fmt.Errorf("send an event to trigger %s: %w", pos[0], err))
	}
	if format == outputJSON {
		return writeJSON(env.stdout, res)
	}
	if res.Duplicate {
		_, err = fmt.Fprintf(env.stdout, "Event %s already started run %s (status %s); nothing new was started.\n",
			res.EventID, res.RunID, res.Status)
		return err
	}
	_, err = fmt.Fprintf(env.stdout, "Event %s started run %s.\nFollow it: weft run watch %s\n", res.EventID, res.RunID, res.RunID)
	return err
}
