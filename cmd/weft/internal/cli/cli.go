// Package cli is the weft binary's client commands: run, runs, signal,
// plan, schedule and trigger. They talk to a Weft deployment through
// pkg/client: the gateway to start runs, send signals and manage
// registered plans, schedules and triggers, the read API to read runs.
// They never open the database. docs/cli.md is the reference. Each is an
// apiCommand; cmd/weft's main dispatches to the maps RunCommands,
// RunsCommands, BulkCommands, PlanCommands, ScheduleCommands,
// TriggerCommands and to Signal.
package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/weftrun/weft/cmd/weft/internal/devfile"
	"github.com/weftrun/weft/pkg/client"
)

// Defaults of the CLI's connection flags: the addresses `weft dev` listens
// on, and where it keeps its token.
const (
	defaultAPIURL  = "http://127.0.0.1:8080"
	defaultReadURL = "http://127.0.0.1:8081"
	defaultDevDir  = ".weft/dev"
)

// Exit codes of the CLI (docs/cli.md), which ExitCode gives. `run start
// --wait` and `run watch` exit with the run's outcome; the other commands
// exit 0 on success.
const (
	ExitOK        = 0
	ExitError     = 1 // bad usage or input, an API or network error, an unknown run
	ExitFailed    = 2 // the run ended FAILED
	ExitCancelled = 3 // the run ended CANCELLED
	ExitTimeout   = 4 // --timeout passed before the run ended
	ExitInterrupt = 130
)

// exitCodesHelp is the exit code table for command help.
const exitCodesHelp = `Exit codes:
  0    the run COMPLETED (start without --wait, get, events, ls: success;
       signal: applied or buffered, or accepted with --no-wait)
  1    bad usage or input, an API or network error, an unknown run, a
       signal refused or ignored
  2    the run ended FAILED
  3    the run ended CANCELLED
  4    --timeout passed before the run ended, or before a signal's verdict
  130  interrupted (Ctrl-C) while waiting
`

// codeError is an error that sets the process's exit code: ExitCode
// gives code rather than 1.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// ExitCode is the process exit code for err, the error a command (any of
// the binary's, not only the CLI's) returned: the code the CLI set for a
// run's outcome, else ExitError (ExitOK for nil).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return ExitError
}

// outputFormat is the value of -o: "text" (the default) or "json".
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
)

// connFlags are the connection and output flags every CLI command takes.
type connFlags struct {
	env     *Env
	set     *flags
	apiURL  *string
	readURL *string
	token   *string
	output  *string
}

// addConnFlags adds --api-url, --read-url, --token and -o/--output to f.
func addConnFlags(f *flags) *connFlags {
	c := &connFlags{
		env:     f.env,
		set:     f,
		apiURL:  f.string("api-url", "WEFT_API_URL", "the gateway's URL (default: weft dev's, from $WEFT_DEV_DIR/endpoints.json, else "+defaultAPIURL+")"),
		readURL: f.string("read-url", "WEFT_READ_URL", "the read API's URL (default: weft dev's, from $WEFT_DEV_DIR/endpoints.json, else "+defaultReadURL+")"),
		token:   f.string("token", "WEFT_TOKEN", "API key (default: the one weft dev wrote to $WEFT_DEV_DIR/token, .weft/dev/token)"),
		output:  new(string),
	}
	f.StringVar(c.output, "o", string(outputText), "output format: text or json")
	f.StringVar(c.output, "output", string(outputText), "output format (same as -o)")
	return c
}

// format returns the checked output format.
func (c *connFlags) format() (outputFormat, error) {
	switch o := outputFormat(*c.output); o {
	case outputText, outputJSON:
		return o, nil
	default:
		return "", fmt.Errorf("-o %q: want text or json", *c.output)
	}
}

// apiCommand is a CLI command that calls the Weft API: its flag set, with
// the connection and output flags, and the synopsis its usage shows.
// newAPICommand makes one; the command adds its own flags to it, calls
// parse, then calls the API with callAPI or withClient.
type apiCommand struct {
	*flags
	conn     *connFlags
	synopsis string
	stdout   io.Writer
	format   outputFormat // -o, set by parse
}

// newAPICommand returns `weft <name>` with the connection and output
// flags; -h prints synopsis, the flags and footer.
func newAPICommand(env *Env, name, synopsis, footer string) *apiCommand {
	f := newFlags(name, env)
	f.setUsage(synopsis, footer)
	return &apiCommand{flags: f, conn: addConnFlags(f), synopsis: synopsis, stdout: env.Stdout}
}

// parse parses args, flags and positional arguments in any order, and
// checks -o. It returns the positional arguments, which must be names
// (none when empty); a wrong count is an error that shows the synopsis.
func (a *apiCommand) parse(args []string, names ...string) ([]string, error) {
	pos, err := a.parseArgs(args)
	if err != nil {
		return nil, err
	}
	if err := wantArgs(a.synopsis, pos, names...); err != nil {
		return nil, err
	}
	a.format, err = a.conn.format()
	return pos, err
}

// withClient builds the client the connection flags name, calls do with
// it, and releases it.
func (a *apiCommand) withClient(do func(*cliClient) error) error {
	c, err := a.conn.client()
	if err != nil {
		return err
	}
	defer c.close()
	return do(c)
}

// callAPI calls do with the command's client (withClient) and prints what
// it returns in the -o format (printAs), for people with text. An error of
// do is returned as "<what>: <error>", with a hint when it reached no
// server at all (cliClient.explain).
func callAPI[T any](a *apiCommand, what string, do func(*cliClient) (T, error), text func(io.Writer, T) error) error {
	return a.withClient(func(c *cliClient) error {
		v, err := do(c)
		if err != nil {
			return c.explain(fmt.Errorf("%s: %w", what, err))
		}
		return printAs(a.stdout, a.format, v, text)
	})
}

// removeCommand is `weft <noun> rm <NOUN>_ID`: it deletes what del names,
// then says so in text whatever -o says.
func removeCommand(noun string, del func(c *cliClient, ctx context.Context, id string) error) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		arg := strings.ToUpper(noun) + "_ID"
		cmd := newAPICommand(env, noun+" rm", "weft "+noun+" rm "+arg, "")
		pos, err := cmd.parse(args, arg)
		if err != nil {
			return err
		}
		return cmd.withClient(func(c *cliClient) error {
			if err := del(c, ctx, pos[0]); err != nil {
				return c.explain(fmt.Errorf("delete %s %s: %w", noun, pos[0], err))
			}
			_, err := fmt.Fprintf(env.Stdout, "Deleted %s %s.\n", noun, pos[0])
			return err
		})
	}
}

// listCommand is `weft <noun> ls`: it reads one page with list and prints
// it with text, which is given the page size for the command of the next
// page, or as JSON under -o json.
func listCommand[L any](noun string, list func(c *cliClient, ctx context.Context, p client.Page) (*L, error),
	text func(w io.Writer, list *L, limit int) error) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		cmd := newAPICommand(env, noun+" ls", "weft "+noun+" ls [--limit N] [--cursor C] [-o json]", "")
		var p client.Page
		addPageFlags(cmd.flags, noun+"s", 50, &p.Limit, &p.Cursor)
		if _, err := cmd.parse(args); err != nil {
			return err
		}
		return callAPI(cmd, "list "+noun+"s", func(c *cliClient) (*L, error) {
			return list(c, ctx, p)
		}, func(w io.Writer, l *L) error {
			return text(w, l, p.Limit)
		})
	}
}

// addPlanFileFlag adds -f and its long form --file, the plan file a
// command sends, stored in p.
func addPlanFileFlag(f *flags, p *string) {
	f.StringVar(p, "f", "", "the plan file, YAML or JSON (required)")
	f.StringVar(p, "file", "", "the plan file (same as -f)")
}

// whereFlags are the tenant, project and environment of what a command
// creates.
type whereFlags struct{ tenant, project, environment *string }

// addWhereFlags adds --tenant, --project and --environment; of ends each
// flag's name in its usage (" of the run").
func addWhereFlags(f *flags, of string) whereFlags {
	return whereFlags{
		tenant:      f.string("tenant", "WEFT_TENANT", "tenant"+of+" (default "+defaultTenant+")"),
		project:     f.string("project", "WEFT_PROJECT", "project"+of+" (default "+defaultProject+")"),
		environment: f.string("environment", "WEFT_ENVIRONMENT", "environment"+of+" (default "+defaultEnvironment+")"),
	}
}

// ids are the flags' values, each defaulting to the dev stack's.
func (w whereFlags) ids() (tenant, project, environment string) {
	return cmp.Or(*w.tenant, defaultTenant), cmp.Or(*w.project, defaultProject), cmp.Or(*w.environment, defaultEnvironment)
}

// addPageFlags adds --limit, with default def, and --cursor, which choose
// the page of a list of noun ("runs"), stored in limit and cursor.
func addPageFlags(f *flags, noun string, def int, limit *int, cursor *string) {
	f.IntVar(limit, "limit", def, noun+" per page, 1 to 200")
	f.StringVar(cursor, "cursor", "", "the page after the one that printed this cursor")
}

// cliClient is a client of the deployment the flags name, and the HTTP
// client under it, whose idle connections close releases. apiFrom and
// readFrom say where each URL came from (urlSource).
type cliClient struct {
	*client.Client
	apiURL, readURL   string
	apiFrom, readFrom string
	hc                *http.Client
}

// close releases the client's idle connections.
func (c *cliClient) close() { c.hc.CloseIdleConnections() }

// client builds the client the flags describe: each URL from its flag,
// else its variable, else weft dev's endpoints file, else its default.
func (c *connFlags) client() (*cliClient, error) {
	devDir := cmp.Or(c.env.Getenv("WEFT_DEV_DIR"), defaultDevDir)
	dev, err := devfile.Read(devDir)
	if err != nil {
		return nil, err
	}
	if dev == nil {
		dev = &devfile.Endpoints{}
	}
	token, err := c.resolveToken(devDir, dev)
	if err != nil {
		return nil, err
	}
	endpointsFile := filepath.Join(devDir, devfile.Name)
	cc := &cliClient{hc: &http.Client{Timeout: client.DefaultAttemptTimeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	cc.apiURL, cc.apiFrom = c.urlSource(*c.apiURL, "api-url", "WEFT_API_URL", dev.Gateway, endpointsFile, defaultAPIURL)
	cc.readURL, cc.readFrom = c.urlSource(*c.readURL, "read-url", "WEFT_READ_URL", dev.ReadAPI, endpointsFile, defaultReadURL)
	cc.Client, err = client.New(cc.apiURL, client.WithToken(token), client.WithReadURL(cc.readURL),
		client.WithHTTPClient(cc.hc), client.WithUserAgent("weft-cli/"+c.env.Version))
	if err != nil {
		return nil, err
	}
	return cc, nil
}

// fromDevFile is the start of a URL's source (urlSource) when it came
// from weft dev's endpoints file.
const fromDevFile = "weft dev's "

// urlSource returns the URL of flag name, whose value is value, and where
// it came from: the flag, else the variable envKey, else dev (read from
// the endpoints file devFile), else def.
func (c *connFlags) urlSource(value, name, envKey, dev, devFile, def string) (string, string) {
	setOnLine := false
	c.set.Visit(func(f *flag.Flag) { setOnLine = setOnLine || f.Name == name })
	switch {
	case setOnLine:
		return value, "--" + name
	case value != "":
		return value, envKey
	case dev != "":
		return dev, fromDevFile + devFile
	default:
		return def, "the default (no --" + name + ", no " + envKey + ", no " + devFile + ")"
	}
}

// resolveToken is --token, else WEFT_TOKEN, else the token file of
// `weft dev` its endpoints file names, else devDir/token.
func (c *connFlags) resolveToken(devDir string, dev *devfile.Endpoints) (string, error) {
	if *c.token != "" {
		return strings.TrimSpace(*c.token), nil
	}
	path := filepath.Join(devDir, "token")
	switch {
	case dev.TokenFile != "":
		path = dev.TokenFile
	case dev.Gateway != "":
		return "", fmt.Errorf("no API token: weft dev took its token from WEFT_DEV_TOKEN (%s says so): pass the same as --token or WEFT_TOKEN",
			filepath.Join(devDir, devfile.Name))
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no API token: pass --token or set WEFT_TOKEN (without either, the token `weft dev` writes to %s is used, and there is none)", path)
	}
	if err != nil {
		return "", fmt.Errorf("read the dev token: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the dev token file %s is empty: pass --token or set WEFT_TOKEN", path)
	}
	return token, nil
}

// explain adds a hint to an error that reached no server at all, and to
// an authentication failure: against a URL that weft dev's endpoints file
// did not name, it says where that URL came from, for a server there may
// be someone else's; against the file's URLs, that the stack which wrote
// it may be gone and another answer there.
func (c *cliClient) explain(err error) error {
	var ue *url.Error
	var answered *client.Error
	switch {
	case errors.As(err, &answered) && answered.Status == http.StatusUnauthorized:
		var notDev []string
		for _, u := range []struct{ what, url, from string }{{"gateway", c.apiURL, c.apiFrom}, {"read API", c.readURL, c.readFrom}} {
			if !strings.HasPrefix(u.from, fromDevFile) {
				notDev = append(notDev, fmt.Sprintf("the %s %s is from %s", u.what, u.url, u.from))
			}
		}
		if len(notDev) == 0 {
			return fmt.Errorf("%w\n(the URLs are those %s names: if the stack that wrote it has stopped, another may answer there; "+
				"start `weft dev` in this folder again, set WEFT_DEV_DIR to the running stack's folder, or pass --token)",
				err, strings.TrimPrefix(c.apiFrom, fromDevFile))
		}
		return fmt.Errorf("%w\n(%s: is that the server you meant? `weft dev` writes its URLs to $WEFT_DEV_DIR/%s, which the CLI reads when no flag or variable names one)",
			err, strings.Join(notDev, "; "), devfile.Name)
	case errors.As(err, &ue) && !errors.As(err, &answered):
		return fmt.Errorf("%w\n(is Weft up? the gateway is %s (from %s) and the read API %s (from %s); `weft dev` runs both, or set --api-url / --read-url)",
			err, c.apiURL, c.apiFrom, c.readURL, c.readFrom)
	default:
		return err
	}
}
