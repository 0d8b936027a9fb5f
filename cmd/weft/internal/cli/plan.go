package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// PlanCommands are the subcommands of `weft plan`: the plan registry
// (docs/api.md, "Registered plans").
func PlanCommands() map[string]Command {
	return map[string]Command{
		"push":    {"register a plan file as an immutable version of a plan, to start by reference", planPush},
		"ls":      {"list registered plan versions, newest first", planList},
		"get":     {"show a registered plan's versions and its latest, or one version with its plan", planGet},
		"archive": {"archive a plan version: starts naming it are refused, latest passes over it", planVersionCommand("archive", (*cliClient).ArchivePlanVersion)},
		"restore": {"let an archived plan version be started again", planVersionCommand("restore", (*cliClient).RestorePlanVersion)},
	}
}

// planHelp says how plans are named.
const planHelp = `A plan version is named PLAN_ID@VERSION (split at its last @), within a
project: --project, else WEFT_PROJECT, else ` + defaultProject + `, as for weft run start.
A version is immutable: push a change under a new planVersion. Start one
with weft run start --plan PLAN_ID@VERSION, or --plan PLAN_ID for the
newest version not archived. docs/cli.md, "Plans".
`

// addProjectFlag adds --project, the project of the plan a command names.
func addProjectFlag(f *flags) *string {
	return f.string("project", "WEFT_PROJECT", "project of the plan (default "+defaultProject+")")
}

const planPushSynopsis = "weft plan push -f PLAN_FILE [--project P] [-o json]"

// pushed is what `weft plan push` prints under -o json: the version, and
// whether this push stored it.
type pushed struct {
	*api.PlanVersion
	Created bool `json:"created"`
}

// planPush is `weft plan push`: it registers the plan file's version,
// the plan as `weft run start -f` sends it.
func planPush(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "plan push", planPushSynopsis, planHelp)
	var file string
	addPlanFileFlag(cmd.flags, &file)
	project := addProjectFlag(cmd.flags)
	if _, err := cmd.parse(args); err != nil {
		return err
	}
	if file == "" {
		return fmt.Errorf("pass -f PLAN_FILE\nusage: %s", planPushSynopsis)
	}
	_, doc, err := readPlanFile(file)
	if err != nil {
		return err
	}
	req := api.PlanPushRequest{ProjectID: cmp.Or(*project, defaultProject), Plan: doc}
	return callAPI(cmd, "push the plan of "+file, func(c *cliClient) (pushed, error) {
		v, created, err := c.PushPlan(ctx, req)
		return pushed{v, created}, err
	}, printPushed)
}

// printPushed says whether a push registered its version or found it.
func printPushed(w io.Writer, p pushed) error {
	v := p.PlanVersion
	name := v.PlanID + "@" + v.PlanVersion
	if !p.Created {
		_, err := fmt.Fprintf(w, "Plan %s is already registered in project %s, same plan (%s); nothing changed.\n", name, v.ProjectID, v.Digest)
		return err
	}
	_, err := fmt.Fprintf(w, "Plan %s registered in project %s (%s).\nStart it: weft run start --plan %s\n", name, v.ProjectID, v.Digest, name)
	return err
}

const planListSynopsis = "weft plan ls [--project P] [--limit N] [--cursor C] [-o json]"

// planList is `weft plan ls`: one page of the tenant's plan versions, of
// every project unless --project or WEFT_PROJECT names one.
func planList(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "plan ls", planListSynopsis, "")
	var f client.PlanFilter
	project := cmd.string("project", "WEFT_PROJECT", "list the plans of this project only (default: every project)")
	addPageFlags(cmd.flags, "plan versions", 50, &f.Limit, &f.Cursor)
	if _, err := cmd.parse(args); err != nil {
		return err
	}
	f.ProjectID = *project
	return callAPI(cmd, "list plans", func(c *cliClient) (*api.PlanVersionList, error) {
		return c.ListPlans(ctx, f)
	}, func(w io.Writer, l *api.PlanVersionList) error {
		return printPlanList(w, l, f)
	})
}

// printPlanList writes one line per version, and the command that lists
// the next page after f's, if there is one.
func printPlanList(w io.Writer, list *api.PlanVersionList, f client.PlanFilter) error {
	tw := newTable(w)
	tw.row("PLAN\tVERSION\tPROJECT\tCREATED\tARCHIVED\n")
	for _, v := range list.Versions {
		tw.row("%s\t%s\t%s\t%s\t%s\n", v.PlanID, v.PlanVersion, v.ProjectID, planTime(&v.CreatedAt), planTime(v.ArchivedAt))
	}
	if err := tw.flush(); err != nil {
		return err
	}
	words := []string{"weft", "plan", "ls"}
	if f.ProjectID != "" {
		words = append(words, "--project", f.ProjectID)
	}
	return printListEnd(w, len(list.Versions), "(no plans)", pageCommand(list.NextCursor, f.Limit, words...))
}

// planTime is a time of a plan version in local time, "-" when nil.
func planTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

const planGetSynopsis = "weft plan get PLAN_ID[@VERSION] [--project P] [--limit N] [--cursor C] [-o json]"

// planGet is `weft plan get`: without a version one page of the plan's
// versions and its latest; with one (or @latest, the version latest
// resolves to now) the version with its plan.
func planGet(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "plan get", planGetSynopsis, planHelp)
	project := addProjectFlag(cmd.flags)
	var pg client.Page
	addPageFlags(cmd.flags, "versions", 50, &pg.Limit, &pg.Cursor)
	pos, err := cmd.parse(args, "PLAN_ID[@VERSION]")
	if err != nil {
		return err
	}
	proj := cmp.Or(*project, defaultProject)
	planID, version := splitPlanRef(pos[0])
	if version == "" {
		return callAPI(cmd, "get plan "+planID, func(c *cliClient) (*api.Plan, error) {
			return c.GetPlan(ctx, proj, planID, pg)
		}, func(w io.Writer, p *api.Plan) error {
			return printPlan(w, p, pageCommand(p.NextCursor, pg.Limit, "weft", "plan", "get", planID, "--project", proj))
		})
	}
	paged := false
	cmd.Visit(func(f *flag.Flag) { paged = paged || f.Name == "limit" || f.Name == "cursor" })
	if paged {
		return fmt.Errorf("--limit and --cursor page a plan's versions: not with @VERSION\nusage: %s", planGetSynopsis)
	}
	return callAPI(cmd, "get plan "+pos[0], func(c *cliClient) (*api.PlanVersion, error) {
		if version == api.PlanVersionLatest {
			p, err := c.GetPlan(ctx, proj, planID, client.Page{Limit: 1})
			if err != nil {
				return nil, err
			}
			if p.Latest == "" {
				return nil, fmt.Errorf("every version of plan %s is archived: none is latest", planID)
			}
			version = p.Latest
		}
		return c.GetPlanVersion(ctx, proj, planID, version)
	}, printPlanVersion)
}

// splitPlanRef splits PLAN_ID@VERSION at its last @; version is "" when
// there is none.
func splitPlanRef(s string) (planID, version string) {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// printPlan writes a page of a plan's versions for people, marking the
// latest, then nextPage, the command that prints the next page, if any.
func printPlan(w io.Writer, p *api.Plan, nextPage string) error {
	tw := newTable(w)
	tw.row("Plan\t%s (project %s)\n", p.PlanID, p.ProjectID)
	tw.row("Latest\t%s\n", cmp.Or(p.Latest, "- (every version is archived)"))
	tw.row("\n")
	tw.row("VERSION\tCREATED\tARCHIVED\tDIGEST\t\n")
	for _, v := range p.Versions {
		mark := ""
		if v.PlanVersion == p.Latest {
			mark = "latest"
		}
		tw.row("%s\t%s\t%s\t%s\t%s\n", v.PlanVersion, planTime(&v.CreatedAt), planTime(v.ArchivedAt), v.Digest, mark)
	}
	if err := tw.flush(); err != nil {
		return err
	}
	return printListEnd(w, len(p.Versions), "", nextPage)
}

// printPlanVersion writes a version for people, then its plan as
// indented JSON when the answer carries it.
func printPlanVersion(w io.Writer, v *api.PlanVersion) error {
	if err := printPlanVersionHead(w, v); err != nil {
		return err
	}
	if len(v.Plan) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return writeJSON(w, v.Plan)
}

// printPlanVersionHead writes a version's identity and state.
func printPlanVersionHead(w io.Writer, v *api.PlanVersion) error {
	tw := newTable(w)
	tw.row("Plan\t%s@%s (project %s)\n", v.PlanID, v.PlanVersion, v.ProjectID)
	tw.row("Created\t%s\n", planTime(&v.CreatedAt))
	tw.row("Archived\t%s\n", planTime(v.ArchivedAt))
	tw.row("Digest\t%s\n", v.Digest)
	return tw.flush()
}

// planVersionCommand is `weft plan <name> PLAN_ID@VERSION`: it calls do on
// the version and says what state it is in now.
func planVersionCommand(name string, do func(c *cliClient, ctx context.Context, project, planID, version string) (*api.PlanVersion, error),
) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		synopsis := "weft plan " + name + " PLAN_ID@VERSION [--project P] [-o json]"
		cmd := newAPICommand(env, "plan "+name, synopsis, planHelp)
		project := addProjectFlag(cmd.flags)
		pos, err := cmd.parse(args, "PLAN_ID@VERSION")
		if err != nil {
			return err
		}
		planID, version := splitPlanRef(pos[0])
		if planID == "" || version == "" || version == api.PlanVersionLatest {
			return fmt.Errorf("%s names no version: want PLAN_ID@VERSION\nusage: %s", pos[0], synopsis)
		}
		return callAPI(cmd, name+" plan "+pos[0], func(c *cliClient) (*api.PlanVersion, error) {
			return do(c, ctx, cmp.Or(*project, defaultProject), planID, version)
		}, printPlanState)
	}
}

// printPlanState says whether a version can be started.
func printPlanState(w io.Writer, v *api.PlanVersion) error {
	state := "is not archived: it can be started"
	if v.ArchivedAt != nil {
		state = "is archived: starts naming it are refused"
	}
	_, err := fmt.Fprintf(w, "Plan %s@%s in project %s %s.\n", v.PlanID, v.PlanVersion, v.ProjectID, state)
	return err
}
