package main

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

	"github.com/weftrun/weft/pkg/client"
)

// The CLI's commands (run, runs, signal, schedule, trigger) talk to a Weft
// deployment through pkg/client: the gateway to start runs, send signals
// and manage schedules and triggers, the read API to read runs. They never
// open the database. docs/cli.md is the reference. Each is an apiCommand.

// Defaults of the CLI's connection flags: the addresses `weft dev` listens
// on, and where it keeps its token.
const (
	defaultAPIURL  = "http://127.0.0.1:8080"
	defaultReadURL = "http://127.0.0.1:8081"
	defaultDevDir  = ".weft/dev"
)

// Exit codes of the CLI (docs/cli.md). `run start --wait` and `run watch`
// exit with the run's outcome; the other commands exit 0 on success.
const (
	exitOK        = 0
	exitError     = 1 // bad usage or input, an API or network error, an unknown run
	exitFailed    = 2 // the run ended FAILED
	exitCancelled = 3 // the run ended CANCELLED
	exitTimeout   = 4 // --timeout passed before the run ended
	exitInterrupt = 130
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

// codeError is an error that sets the process's exit code: main exits with
// code rather than 1.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// exitCode is the process exit code for err, the error run returned: the
// code of a *codeError in its chain, else exitError (exitOK for nil).
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitError
}

// outputFormat is the value of -o: "text" (the default) or "json".
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
)

// connFlags are the connection and output flags every CLI command takes.
type connFlags struct {
	env     *environment
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
func newAPICommand(env *environment, name, synopsis, footer string) *apiCommand {
	f := newFlags(name, env)
	f.setUsage(synopsis, footer)
	return &apiCommand{flags: f, conn: addConnFlags(f), synopsis: synopsis, stdout: env.stdout}
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
func removeCommand(noun string, del func(c *cliClient, ctx context.Context, id string) error) func(context.Context, *environment, []string) error {
	return func(ctx context.Context, env *environment, args []string) error {
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
			_, err := fmt.Fprintf(env.stdout, "Deleted %s %s.\n", noun, pos[0])
			return err
		})
	}
}

// listCommand is `weft <noun> ls`: it reads one page with list and prints
// it with text, which is given the page size for the command of the next
// page, or as JSON under -o json.
func listCommand[L any](noun string, list func(c *cliClient, ctx context.Context, p client.Page) (*L, error),
	text func(w io.Writer, list *L, limit int) error) func(context.Context, *environment, []string) error {
	return func(ctx context.Context, env *environment, args []string) error {
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
		tenant:      f.string("tenant", "WEFT_TENANT", "tenant"+of+" (default "+devTenant+")"),
		project:     f.string("project", "WEFT_PROJECT", "project"+of+" (default "+defaultProject+")"),
		environment: f.string("environment", "WEFT_ENVIRONMENT", "environment"+of+" (default "+defaultEnvironment+")"),
	}
}

// ids are the flags' values, each defaulting to the dev stack's.
func (w whereFlags) ids() (tenant, project, environment string) {
	return cmp.Or(*w.tenant, devTenant), cmp.Or(*w.project, defaultProject), cmp.Or(*w.environment, defaultEnvironment)
}

// addPageFlags adds --limit, with default def, and --cursor, which choose
// the page of a list of noun ("runs"), stored in limit and cursor.
func addPageFlags(f *flags, noun string, def int, limit *int, cursor *string) {
	f.IntVar(limit, "limit", def, noun+" per page, 1 to 200")
	f.StringVar(cursor, "cursor", "", "the page after the one that printed this cursor")
}

// commandGroup is `weft <name> <subcommand>`: it runs the one of subs
// that its arguments start with; help, or a name it does not know, lists
// subs.
func commandGroup(name string, subs map[string]command) func(context.Context, *environment, []string) error {
	return func(ctx context.Context, env *environment, args []string) error {
		if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
			subUsage(env.stdout, name, subs)
			return nil
		}
		if len(args) == 0 {
			subUsage(env.stderr, name, subs)
			return fmt.Errorf("%s: name a command", name)
		}
		sub, ok := subs[args[0]]
		if !ok {
			subUsage(env.stderr, name, subs)
			return fmt.Errorf("%s: unknown command %q", name, args[0])
		}
		return sub.run(ctx, env, args[1:])
	}
}

// subUsage lists the subcommands of `weft <name>`.
func subUsage(w io.Writer, name string, subs map[string]command) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: weft %s <command> [flags]\n\nCommands:\n", name)
	writeCommands(&b, subs)
	fmt.Fprintf(&b, "\nRun 'weft %s <command> -h' for a command's flags. docs/cli.md has more.\n", name)
	_, _ = io.WriteString(w, b.String()) // usage is best effort, as main's is
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
	devDir := cmp.Or(c.env.getenv("WEFT_DEV_DIR"), defaultDevDir)
	dev, err := readDevEndpoints(devDir)
	if err != nil {
		return nil, err
	}
	if dev == nil {
		dev = &devEndpoints{}
	}
	token, err := c.resolveToken(devDir, dev)
	if err != nil {
		return nil, err
	}
	endpointsFile := filepath.Join(devDir, devEndpointsFile)
	cc := &cliClient{hc: &http.Client{Timeout: client.DefaultAttemptTimeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	cc.apiURL, cc.apiFrom = c.urlSource(*c.apiURL, "api-url", "WEFT_API_URL", dev.Gateway, endpointsFile, defaultAPIURL)
	cc.readURL, cc.readFrom = c.urlSource(*c.readURL, "read-url", "WEFT_READ_URL", dev.ReadAPI, endpointsFile, defaultReadURL)
	cc.Client, err = client.New(cc.apiURL, client.WithToken(token), client.WithReadURL(cc.readURL),
		client.WithHTTPClient(cc.hc), client.WithUserAgent("weft-cli/"+version))
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
func (c *connFlags) resolveToken(devDir string, dev *devEndpoints) (string, error) {
	if *c.token != "" {
		return strings.TrimSpace(*c.token), nil
	}
	path := filepath.Join(devDir, "token")
	switch {
	case dev.TokenFile != "":
		path = dev.TokenFile
	case dev.Gateway != "":
		return "", fmt.Errorf("no API token: weft dev took its token from WEFT_DEV_TOKEN (%s says so): pass the same as --token or WEFT_TOKEN",
			filepath.Join(devDir, devEndpointsFile))
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
// an authentication failure against a URL that weft dev's endpoints file
// did not name: it says where that URL came from, for a server there may
// be someone else's.
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
			return err
		}
		return fmt.Errorf("%w\n(%s: is that the server you meant? `weft dev` writes its URLs to $WEFT_DEV_DIR/%s, which the CLI reads when no flag or variable names one)",
			err, strings.Join(notDev, "; "), devEndpointsFile)
	case errors.As(err, &ue) && !errors.As(err, &answered):
		return fmt.Errorf("%w\n(is Weft up? the gateway is %s (from %s) and the read API %s (from %s); `weft dev` runs both, or set --api-url / --read-url)",
			err, c.apiURL, c.apiFrom, c.readURL, c.readFrom)
	default:
		return err
	}
}

// parseArgs parses args, flags and positional arguments in any order, and
// returns the positional ones; everything after "--" is positional. -h
// prints the usage and returns errUsage.
func (f *flags) parseArgs(args []string) ([]string, error) {
	if err := errors.Join(f.envErrs...); err != nil {
		return nil, err
	}
	var positional []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errUsage
			}
			return nil, err
		}
		rest := f.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// setUsage makes -h print synopsis, the flags, and footer.
func (f *flags) setUsage(synopsis, footer string) {
	f.Usage = func() {
		out := f.Output()
		_, _ = fmt.Fprintf(out, "Usage: %s\n\nFlags:\n", synopsis)
		f.PrintDefaults()
		if footer != "" {
			_, _ = io.WriteString(out, "\n"+footer)
		}
	}
}

// wantArgs checks the count of positional arguments against names.
func wantArgs(synopsis string, got []string, names ...string) error {
	if len(got) == len(names) {
		return nil
	}
	want := "no arguments"
	if len(names) > 0 {
		want = strings.Join(names, " and ")
	}
	return fmt.Errorf("want %s, got %d argument(s) %q\nusage: %s", want, len(got), got, synopsis)
}
