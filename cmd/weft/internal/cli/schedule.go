package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"
	_ "time/tzdata" // a schedule's zone does not depend on the host's tz database

	"github.com/weftrun/weft/pkg/api"
)

// ScheduleCommands are the subcommands of `weft schedule`.
func ScheduleCommands() map[string]Command {
	return map[string]Command{
		"create": {"create a schedule: a plan file started at the fire times of a cron expression", scheduleCreate},
		"update": {"replace a schedule's definition (plan, cron, input, policies), keeping its id and history", scheduleUpdate},
		"ls":     {"list schedules", listCommand("schedule", (*cliClient).ListSchedules, printScheduleList)},
		"get":    {"show a schedule: its next fire, last fire and its run, and what it skipped", scheduleCommand("get", (*cliClient).GetSchedule, printSchedule)},
		"pause":  {"stop a schedule from firing", scheduleCommand("pause", (*cliClient).PauseSchedule, printScheduleState)},
		"resume": {"let a paused schedule fire again", scheduleCommand("resume", (*cliClient).ResumeSchedule, printScheduleState)},
		"rm":     {"delete a schedule (its runs go on)", removeCommand("schedule", (*cliClient).DeleteSchedule)},
	}
}

const scheduleCreateSynopsis = "weft schedule create -f PLAN_FILE --cron EXPR [--timezone TZ] [--id ID] [--input JSON] " +
	"[--misfire skip|catchup|compress] [--max-catchup N] [--overlap skip|buffer-one|allow|cancel-previous] [--priority 1-5] [--paused] [-o json]"

// scheduleHelp explains the policies.
const scheduleHelp = `EXPR has five fields: minute hour day-of-month month day-of-week, in TZ
(an IANA zone, default UTC). Quote it for the shell: --cron '0 9 * * MON-FRI'.

Each run's input is --input, a JSON object, with "scheduledFor" (the fire
time, RFC 3339 UTC) and "schedule" ({"id", "window"?}) added by the fire;
--input may not hold those two keys.

--misfire says what happens to fire times missed while no scheduler ran
(or the schedule was paused): skip drops them, catchup replays the newest
--max-catchup of them (default 10), compress starts one run covering all.
--overlap says what happens to a fire while the last run is still active:
skip drops it, buffer-one keeps one until that run ends, allow starts it
anyway, cancel-previous sends that run CANCEL first. docs/schedules.md.
`

// scheduleForm is the flags that define a schedule, shared by create and
// update.
type scheduleForm struct {
	req         api.ScheduleRequest
	file, input string
	where       whereFlags
}

// addScheduleForm adds the definition's flags to cmd.
func addScheduleForm(cmd *apiCommand) *scheduleForm {
	f := &scheduleForm{}
	addPlanFileFlag(cmd.flags, &f.file)
	cmd.StringVar(&f.req.Cron, "cron", "", "the cron expression, five fields (required)")
	cmd.StringVar(&f.req.Timezone, "timezone", "", "the IANA timezone of the expression (default UTC)")
	cmd.StringVar(&f.input, "input", "", "the base of every run's input, a JSON object, @FILE, or - for stdin")
	cmd.StringVar(&f.req.MisfirePolicy, "misfire", "", "misfire policy: skip, catchup or compress (default skip)")
	cmd.IntVar(&f.req.MaxCatchup, "max-catchup", 0, "with --misfire catchup: the most missed fire times replayed (default 10)")
	cmd.StringVar(&f.req.OverlapPolicy, "overlap", "", "overlap policy: skip, buffer-one, allow or cancel-previous (default skip)")
	cmd.IntVar(&f.req.Priority, "priority", 0, "the admission priority of every run it starts, 1 (lowest) to 5 (default 3)")
	f.where = addWhereFlags(cmd.flags, "")
	return f
}

// request reads the plan file and the input into the request.
func (f *scheduleForm) request(synopsis string) (api.ScheduleRequest, error) {
	req := f.req
	if f.file == "" || req.Cron == "" {
		return req, fmt.Errorf("pass -f PLAN_FILE and --cron EXPR\nusage: %s", synopsis)
	}
	var err error
	if _, req.Plan, err = readPlanFile(f.file); err != nil {
		return req, err
	}
	if req.Input, err = jsonArg("--input", f.input); err != nil {
		return req, err
	}
	req.TenantID, req.ProjectID, req.EnvironmentID = f.where.ids()
	return req, nil
}

// scheduleCreate is `weft schedule create`.
func scheduleCreate(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "schedule create", scheduleCreateSynopsis, scheduleHelp)
	form := addScheduleForm(cmd)
	paused := cmd.Bool("paused", false, "create it paused")
	cmd.StringVar(&form.req.ScheduleID, "id", "", "the schedule's id: repeating the command creates it once (default: a fresh id)")
	if _, err := cmd.parse(args); err != nil {
		return err
	}
	req, err := form.request(scheduleCreateSynopsis)
	if err != nil {
		return err
	}
	if *paused {
		req.Paused = paused
	}
	return callAPI(cmd, "create a schedule of "+form.file, func(c *cliClient) (*api.Schedule, error) {
		return c.CreateSchedule(ctx, req)
	}, printScheduleDefined)
}

const scheduleUpdateSynopsis = "weft schedule update SCHEDULE_ID -f PLAN_FILE --cron EXPR [--timezone TZ] [--input JSON] " +
	"[--misfire skip|catchup|compress] [--max-catchup N] [--overlap skip|buffer-one|allow|cancel-previous] [-o json]"

// scheduleUpdate is `weft schedule update`: it replaces a schedule's
// definition (PUT /v1/schedules/{scheduleId}) with the one the flags give,
// whole, as create takes it; the schedule keeps its id, state and history.
func scheduleUpdate(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "schedule update", scheduleUpdateSynopsis, scheduleHelp)
	form := addScheduleForm(cmd)
	pos, err := cmd.parse(args, "SCHEDULE_ID")
	if err != nil {
		return err
	}
	req, err := form.request(scheduleUpdateSynopsis)
	if err != nil {
		return err
	}
	return callAPI(cmd, "update schedule "+pos[0], func(c *cliClient) (*api.Schedule, error) {
		return c.UpdateSchedule(ctx, pos[0], req)
	}, printScheduleDefined)
}

// printScheduleDefined says what a created or updated schedule starts,
// and when next.
func printScheduleDefined(w io.Writer, s *api.Schedule) error {
	_, err := fmt.Fprintf(w, "Schedule %s: %q in %s starts plan %s %s; next fire %s.\n",
		s.ScheduleID, s.Cron, s.Timezone, s.PlanID, s.PlanVersion, fireTime(s.NextFireAt, s.Timezone))
	return err
}

// printScheduleList writes one line per schedule, and the command that lists
// the next page of limit schedules, if there is one.
func printScheduleList(w io.Writer, list *api.ScheduleList, limit int) error {
	tw := newTable(w)
	tw.row("SCHEDULE\tCRON\tTIMEZONE\tPLAN\tSTATE\tNEXT FIRE\tLAST FIRE\tSKIPPED\n")
	for _, s := range list.Schedules {
		tw.row("%s\t%s\t%s\t%s %s\t%s\t%s\t%s\t%d\n", s.ScheduleID, s.Cron, s.Timezone, s.PlanID, s.PlanVersion,
			scheduleState(s), fireTime(s.NextFireAt, s.Timezone), lastFire(s), skippedTotal(s.Skipped))
	}
	if err := tw.flush(); err != nil {
		return err
	}
	return printListEnd(w, len(list.Schedules), "(no schedules)", pageCommand(list.NextCursor, limit, "weft", "schedule", "ls"))
}

// scheduleCommand is `weft schedule <name> SCHEDULE_ID`: it calls do on
// the schedule and prints the schedule do returns with text, or as JSON
// under -o json.
func scheduleCommand(name string, do func(c *cliClient, ctx context.Context, id string) (*api.Schedule, error),
	text func(io.Writer, *api.Schedule) error) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		cmd := newAPICommand(env, "schedule "+name, "weft schedule "+name+" SCHEDULE_ID [-o json]", "")
		pos, err := cmd.parse(args, "SCHEDULE_ID")
		if err != nil {
			return err
		}
		return callAPI(cmd, "schedule "+name+" "+pos[0], func(c *cliClient) (*api.Schedule, error) {
			return do(c, ctx, pos[0])
		}, text)
	}
}

// printScheduleState says whether a schedule is paused, and its next fire.
func printScheduleState(w io.Writer, s *api.Schedule) error {
	_, err := fmt.Fprintf(w, "Schedule %s is %s; next fire %s.\n", s.ScheduleID, scheduleState(*s), fireTime(s.NextFireAt, s.Timezone))
	return err
}

// printSchedule writes a schedule for people, with what it skipped.
func printSchedule(w io.Writer, s *api.Schedule) error {
	tw := newTable(w)
	tw.row("Schedule\t%s (%s)\n", s.ScheduleID, scheduleState(*s))
	tw.row("Cron\t%s in %s\n", s.Cron, s.Timezone)
	tw.row("Plan\t%s %s\n", s.PlanID, s.PlanVersion)
	tw.row("Where\ttenant %s, project %s, environment %s\n", s.TenantID, s.ProjectID, s.EnvironmentID)
	tw.row("Policies\tmisfire %s (max catch-up %d), overlap %s\n", s.MisfirePolicy, s.MaxCatchup, s.OverlapPolicy)
	tw.row("Next fire\t%s\n", fireTime(s.NextFireAt, s.Timezone))
	tw.row("Last fire\t%s\n", lastFire(*s))
	if s.BufferedFireAt != nil {
		tw.row("Buffered\t%s (starts when the last run ends)\n", fireTime(s.BufferedFireAt, s.Timezone))
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

// fireTime renders fire time t in the schedule's zone tz and in UTC:
// "2026-12-03 02:00 CET (01:00 UTC)", with the UTC date too when it is
// another day ("2026-12-03 00:30 CET (2026-12-02 23:30 UTC)"). It is UTC
// alone when tz is UTC or empty or names no zone, and "-" when t is nil.
func fireTime(t *time.Time, tz string) string {
	if t == nil {
		return "-"
	}
	const day, clock = "2006-01-02", "15:04 MST"
	utc := t.UTC()
	loc, err := time.LoadLocation(tz)
	if tz == "" || err != nil || loc == time.UTC {
		return utc.Format(day + " " + clock)
	}
	local := t.In(loc)
	inUTC := utc.Format(clock)
	if local.Format(day) != utc.Format(day) {
		inUTC = utc.Format(day + " " + clock)
	}
	return local.Format(day+" "+clock) + " (" + inUTC + ")"
}

// lastFire is a schedule's last fire time (fireTime) and the run it
// started, "-" when it never fired.
func lastFire(s api.Schedule) string {
	if s.LastFireAt == nil {
		return "-"
	}
	return fireTime(s.LastFireAt, s.Timezone) + ", run " + cmp.Or(s.LastRunID, "-")
}

func skippedTotal(k api.SkipCounts) int64 { return k.Misfire + k.Overlap + k.CatchupLimit + k.Refused }
