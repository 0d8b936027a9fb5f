package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

const rerunSynopsis = "weft run rerun RUN_ID --from STEP [--input JSON] [--wait [--timeout D]] [--run-request-id ID] [-o json]"

// runRerun is `weft run rerun`: a new run of RUN_ID's plan version from
// step --from (client.Rerun), followed to its end with --wait as `run
// start --wait` follows a start. --run-request-id is the request's
// runRequestId, named as `run start` names it; --request-id is its
// deprecated name.
func runRerun(ctx context.Context, env *Env, args []string) error {
	cmd := newAPICommand(env, "run rerun", rerunSynopsis, exitCodesHelp)
	from := cmd.String("from", "", "the step to run anew, with the steps that depend on it; every other step's outcome is copied from RUN_ID (required)")
	input := cmd.String("input", "", "the new run's input, a JSON document, @FILE, or - for stdin (default: RUN_ID's input)")
	requestID := cmd.String("run-request-id", "", "your id for this rerun: repeating it starts no second run (default: a fresh id)")
	cmd.deprecatedAlias("request-id", "run-request-id", rerunSynopsis, exitCodesHelp)
	wait := cmd.Bool("wait", false, "follow the new run's progress until it ends, and exit with its outcome")
	timeout := cmd.Duration("timeout", 0, "with --wait: stop waiting after this long and exit 4 (default: wait as long as the run takes)")
	pos, err := cmd.parse(args, "RUN_ID")
	if err != nil {
		return err
	}
	if *from == "" {
		return fmt.Errorf("no step: pass --from STEP, the step to run anew (see weft run get %s)\nusage: %s", pos[0], rerunSynopsis)
	}
	doc, err := jsonArg("--input", *input)
	if err != nil {
		return err
	}
	req := api.RerunRequest{FromStepID: *from, Input: doc, RunRequestID: *requestID}
	return cmd.withClient(func(c *cliClient) error {
		res, err := c.Rerun(ctx, pos[0], req)
		if err != nil {
			return c.explain(fmt.Errorf("rerun run %s from step %s: %w%s", pos[0], *from, err, problemLines(err)))
		}
		if !*wait {
			return printRerun(env.Stdout, cmd.format, pos[0], *from, res, false)
		}
		if cmd.format == outputText { // under -o json, stdout carries the final view alone
			if err := printRerun(env.Stdout, cmd.format, pos[0], *from, res, true); err != nil {
				return err
			}
		}
		return watchToEnd(ctx, env, c, res.RunID, nil, cmd.format, *timeout)
	})
}

// printRerun reports a rerun of runID from step; unless waiting, it says
// how to follow the new run.
func printRerun(w io.Writer, format outputFormat, runID, step string, res *api.StartRunResult, waiting bool) error {
	return printAs(w, format, res, func(w io.Writer, res *api.StartRunResult) error {
		var err error
		if res.Duplicate {
			err = printDuplicateStart(w, res)
		} else {
			_, err = fmt.Fprintf(w, "Started run %s, a rerun of run %s from step %s.\n", res.RunID, runID, step)
		}
		if err == nil && !waiting {
			_, err = fmt.Fprintf(w, "Follow it: weft run watch %s\n", res.RunID)
		}
		return err
	})
}

// problemLines lists the problems of a refusal that has them
// (details.problems, an input its plan's schema refuses), one per line,
// each after a newline; "" when it has none.
func problemLines(err error) string {
	var e *client.Error
	if !errors.As(err, &e) {
		return ""
	}
	ps, _ := e.Details["problems"].([]any)
	var b strings.Builder
	for _, p := range ps {
		m, _ := p.(map[string]any)
		path, _ := m["path"].(string)
		msg, _ := m["message"].(string)
		if path == "" {
			path = "(the whole body)"
		}
		fmt.Fprintf(&b, "\n  %s: %s", path, msg)
	}
	return b.String()
}
