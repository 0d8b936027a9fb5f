package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// scheduleSubcommands are the subcommands of `weft schedule`.
func scheduleSubcommands() map[string]command {
	return map[string]command{
		"create": {"create a schedule: a plan file started at the fire times of a cron expression", scheduleCreate},
		"ls":     {"list schedules", scheduleList},
		"get":    {"show a schedule: its next fire, last run and what it skipped", scheduleGet},
		"pause": {"stop a schedule from firing", func(ctx context.Context, env *environment, args []string) error {
			return schedulePauseResume(ctx, env, args, true)
		}},
		"resume": {"let a paused schedule fire again", func(ctx context.Context, env *environment, args []string) error {
			return schedulePauseResume(ctx, env, args, false)
		}},
		"rm": {"delete a schedule (its runs go on)", scheduleRemove},
	}
}

// runSchedule is `weft schedule <subcommand>`.
func runSchedule(ctx context.Context, env *environment, args []string) error {
	return subcommand(ctx, env, "schedule", scheduleSubcommands(), args)
}

const scheduleCreateSynopsis = "weft schedule create -f PLAN_FILE --cron EXPR [--timezone TZ] [--id ID] [--input JSON] " +
	"[--misfire skip|catchup|compress] [--max-catchup N] [--overlap skip|buffer-one|allow|cancel-previous] [--paused] [-o json]"

// scheduleHelp explains the policies.
const scheduleHelp = `EXPR has five fields: minute hour day-of-month month day-of-week, in TZ
(an IANA zone, default UTC). Quote it for the shell: --cron '0 9 * * MON-FRI'.

--misfire says what happens to fire times missed while no scheduler ran
(or the schedule was paused): skip drops them, catchup replays the newest
--max-catchup of them (default 10), compress starts one run covering all.
--overlap says what happens to a fire while the last run is still active:
skip drops it, buffer-one keeps one until that run ends, allow starts it
anyway, cancel-previous sends that run CANCEL first. docs/schedules.md.
`

// scheduleCreate is `weft schedule create`.
func scheduleCreate(ctx context.Context, env *environment, args []string) error {
	f := newFlags("schedule create", env)
	conn := addConnFlags(f)
	var req api.ScheduleRequest
	var file, input string
	paused := f.Bool("paused", false, "create it paused")
	f.StringVar(&file, "f", "", "the plan file, YAML or JSON (required)")
	f.StringVar(&file, "file", "", "the plan file (same as -f)")
	f.StringVar(&req.Cron, "cron", "", "the cron expression, five fields (required)")
	f.StringVar(&req.Timezone, "timezone", "", "the IANA timezone of the expression (default UTC)")
	f.StringVar(&req.ScheduleID, "id", "", "the schedule's id: repeating the command creates it once (default: a fresh id)")
	f.StringVar(&input, "input", "", "the input of every run, a JSON document")
	f.StringVar(&req.MisfirePolicy, "misfire", "", "misfire policy: skip, catchup or compress (default skip)")
	f.IntVar(&req.MaxCatchup, "max-catchup", 0, "with --misfire catchup: the most missed fire times replayed (default 10)")
	f.StringVar(&req.OverlapPolicy, "overlap", "", "overlap policy: skip, buffer-one, allow or cancel-previous (default skip)")
	where := addWhereFlags(f)
	f.setUsage(scheduleCreateSynopsis, scheduleHelp)
	_, format, err := conn.parse(f, scheduleCreateSynopsis, args)
	if err != nil {
		return err
	}
	if file == "" || req.Cron == "" {
		return fmt.Errorf("pass -f PLAN_FILE and --cron EXPR\nusage: %s", scheduleCreateSynopsis)
	}
	if _, req.Plan, err = readPlanFile(file); err != nil {
		return err
	}
	if input != "" {
		if req.Input, err = jsonArg("--input", input); err != nil {
			return err
		}
	}
	req.TenantID, req.ProjectID, req.EnvironmentID = where.ids()
	if *paused {
		req.Paused = paused
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	s, err := c.CreateSchedule(ctx, req)
	if err != nil {
		return c.explain(fmt.Errorf("create a schedule of %s: %w", file, err))
	}
	if format == outputJSON {
		return writeJSON(env.stdout, s)
	}
	_, err = fmt.Fprintf(env.stdout, "Schedule %s: %q in %s starts plan %s %s; next fire %s.\n",
		s.ScheduleID, s.Cron, s.Timezone, s.PlanID, s.PlanVersion, fireTime(s.NextFireAt))
	return err
}

// whereFlags are the tenant, project and environment of what a command
// creates.
type whereFlags struct{ tenant, project, environment *string }

func addWhereFlags(f *flags) whereFlags {
	return whereFlags{
		tenant:      f.string("tenant", "WEFT_TENANT", "tenant (default "+devTenant+")"),
		project:     f.string("project", "WEFT_PROJECT", "project (default "+defaultProject+")"),
		environment: f.string("environment", "WEFT_ENVIRONMENT", "environment (default "+defaultEnvironment+")"),
	}
}

func (w whereFlags) ids() (tenant, project, environment string) {
	return cmp.Or(*w.tenant, devTenant), cmp.Or(*w.project, defaultProject), cmp.Or(*w.environment, defaultEnvironment)
}

const scheduleListSynopsis = "weft schedule ls [--limit N] [--cursor C] [-o json]"

// scheduleList is `weft schedule ls`.
func scheduleList(ctx context.Context, env *environment, args []string) error {
	f := newFlags("schedule ls", env)
	conn := addConnFlags(f)
	var p client.Page
	f.IntVar(&p.Limit, "limit", 50, "schedules per page, 1 to 200")
	f.StringVar(&p.Cursor, "cursor", "", "the page after the one that printed this cursor")
	f.setUsage(scheduleListSynopsis, "")
	_, format, err := conn.parse(f, scheduleListSynopsis, args)
	if err != nil {
		return err
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	list, err := c.ListSchedules(ctx, p)
	if err != nil {
		return c.explain(fmt.Errorf("list schedules: %w", err))
	}
	if format == outputJSON {
		return writeJSON(env.stdout, list)
	}
	return printScheduleList(env.stdout, list, p.Limit)
}

// printScheduleList writes one line per schedule, and how to get the next
// page.
func printScheduleList(w io.Writer, list *api.ScheduleList, limit int) error {
	tw := newTable(w)
	tw.row("SCHEDULE\tCRON\tTIMEZONE\tPLAN\tSTATE\tNEXT FIRE\tLAST RUN\tSKIPPED\n")
	for _, s := range list.Schedules {
		tw.row("%s\t%s\t%s\t%s %s\t%s\t%s\t%s\t%d\n", s.ScheduleID, s.Cron, s.Timezone, s.PlanID, s.PlanVersion,
			scheduleState(s), fireTime(s.NextFireAt), cmp.Or(s.LastRunID, "-"), skippedTotal(s.Skipped))
	}
	if err := tw.flush(); err != nil {
		return err
	}
	if len(list.Schedules) == 0 {
		_, err := fmt.Fprintln(w, "(no schedules)")
		return err
	}
	if list.NextCursor != "" {
		_, err := fmt.Fprintf(w, "More: %s\n",
			quoteArgs([]string{"weft", "schedule", "ls", "--limit", strconv.Itoa(limit), "--cursor", list.NextCursor}))
		return err
	}
	return nil
}

const scheduleGetSynopsis = "weft schedule get SCHEDULE_ID [-o json]"

// scheduleGet is `weft schedule get`.
func scheduleGet(ctx context.Context, env *environment, args []string) error {
	return withSchedule(env, "schedule get", scheduleGetSynopsis, args, func(c *cliClient, id string) (*api.Schedule, error) {
		return c.GetSchedule(ctx, id)
	}, printSchedule)
}

// schedulePauseResume is `weft schedule pause` and `weft schedule resume`.
func schedulePauseResume(ctx context.Context, env *environment, args []string, pause bool) error {
	name, do := "resume", (*cliClient).ResumeSchedule
	if pause {
		name, do = "pause", (*cliClient).PauseSchedule
	}
	synopsis := "weft schedule " + name + " SCHEDULE_ID [-o json]"
	return withSchedule(env, "schedule "+name, synopsis, args, func(c *cliClient, id string) (*api.Schedule, error) {
		return do(c, ctx, id)
	}, func(w io.Writer, s *api.Schedule) error {
		_, err := fmt.Fprintf(w, "Schedule %s is %s; next fire %s.\n", s.ScheduleID, scheduleState(*s), fireTime(s.NextFireAt))
		return err
	})
}

const scheduleRemoveSynopsis = "weft schedule rm SCHEDULE_ID"

// scheduleRemove is `weft schedule rm`.
func scheduleRemove(ctx context.Context, env *environment, args []string) error {
	f := newFlags("schedule rm", env)
	conn := addConnFlags(f)
	f.setUsage(scheduleRemoveSynopsis, "")
	pos, _, err := conn.parse(f, scheduleRemoveSynopsis, args, "SCHEDULE_ID")
	if err != nil {
		return err
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	if err := c.DeleteSchedule(ctx, pos[0]); err != nil {
		return c.explain(fmt.Errorf("delete schedule %s: %w", pos[0], err))
	}
	_, err = fmt.Fprintf(env.stdout, "Deleted schedule %s.\n", pos[0])
	return err
}

// withSchedule parses a command that takes a schedule id, calls do and
// prints its schedule with print (or as JSON under -o json).
func withSchedule(env *environment, name, synopsis string, args []string,
	do func(*cliClient, string) (*api.Schedule, error), print func(io.Writer, *api.Schedule) error) error {
	f := newFlags(name, env)
	conn := addConnFlags(f)
	f.setUsage(synopsis, "")
	pos, format, err := conn.parse(f, synopsis, args, "SCHEDULE_ID")
	if err != nil {
		return err
	}
	c, err := conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	s, err := do(c, pos[0])
	if err != nil {
		return c.explain(fmt.Errorf("%s %s: %w", name, pos[0], err))
	}
	if format == outputJSON {
		return writeJSON(env.stdout, s)
	}
	return print(env.stdout, s)
}

// printSchedule writes a schedule for people, with what it skipped.
func printSchedule(w io.Writer, s *api.Schedule) error {
	tw := newTable(w)
	tw.row("Schedule\t%s (%s)\n", s.ScheduleID, scheduleState(*s))
	tw.row("Cron\t%s in %s\n", s.Cron, s.Timezone)
	tw.row("Plan\t%s %s\n", s.PlanID, s.PlanVersion)
	tw.row("Where\ttenant %s, project %s, environment %s\n", s.TenantID, s.ProjectID, s.EnvironmentID)
	tw.row("Policies\tmisfire %s (max catch-up %d), overlap %s\n", s.MisfirePolicy, s.MaxCatchup, s.OverlapPolicy)
	tw.row("Next fire\t%s\n", fireTime(s.NextFireAt))
	tw.row("Last fire\t%s, run %s\n", fireTime(s.LastFireAt), cmp.Or(s.LastRunID, "-"))
	if s.BufferedFireAt != nil {
		tw.row("Buffered\t%s (starts when the last run ends)\n", fireTime(s.BufferedFireAt))
	}
	k := s.Skipped
	tw.row("Skipped\t%d: misfire %d, overlap %d, catch-up limit %d, refused %d\n",
		skippedTotal(k), k.Misfire, k.Overlap, k.CatchupLimit, k.Refused)
	for _, sk := range s.RecentSkips {
		span := sk.From.Format(time.RFC3339)
		if !sk.To.Equal(sk.From) {
			span += " to " + sk.To.Format(time.RFC3339)
		}
		tw.row("\t%d × %s: %s %s\n", sk.Count, sk.Reason, span, sk.Message)
	}
	return tw.flush()
}

func scheduleState(s api.Schedule) string {
	if s.Paused {
		return "paused"
	}
	return "active"
}

// fireTime renders a fire time in UTC, "-" when there is none.
func fireTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func skippedTotal(k api.SkipCounts) int64 { return k.Misfire + k.Overlap + k.CatchupLimit + k.Refused }
