package main

import (
	"cmp"
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

// The CLI's commands (run, runs, signal) talk to a Weft deployment through
// pkg/client: the gateway to start runs and send signals, the read API to
// read them. They never open the database. docs/cli.md is the reference.

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
  0    the run COMPLETED (start without --wait, get, events, ls, signal: success)
  1    bad usage or input, an API or network error, an unknown run
  2    the run ended FAILED
  3    the run ended CANCELLED
  4    --timeout passed before the run ended
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
	apiURL  *string
	readURL *string
	token   *string
	output  *string
}

// addConnFlags adds --api-url, --read-url, --token and -o/--output to f.
func addConnFlags(f *flags) *connFlags {
	c := &connFlags{
		env:     f.env,
		apiURL:  f.string("api-url", "WEFT_API_URL", "the gateway's URL (default "+defaultAPIURL+")"),
		readURL: f.string("read-url", "WEFT_READ_URL", "the read API's URL (default "+defaultReadURL+")"),
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

// parse parses args with f, requires the positional arguments names
// (none when empty), and returns them with the -o format.
func (c *connFlags) parse(f *flags, synopsis string, args []string, names ...string) ([]string, outputFormat, error) {
	pos, err := f.parseArgs(args)
	if err != nil {
		return nil, "", err
	}
	if err := wantArgs(synopsis, pos, names...); err != nil {
		return nil, "", err
	}
	format, err := c.format()
	return pos, format, err
}

// cliClient is a client of the deployment the flags name, and the HTTP
// client under it, whose idle connections close releases.
type cliClient struct {
	*client.Client
	apiURL, readURL string
	hc              *http.Client
}

// close releases the client's idle connections.
func (c *cliClient) close() { c.hc.CloseIdleConnections() }

// client builds the client the flags describe.
func (c *connFlags) client() (*cliClient, error) {
	token, err := c.resolveToken()
	if err != nil {
		return nil, err
	}
	cc := &cliClient{
		apiURL:  cmp.Or(*c.apiURL, defaultAPIURL),
		readURL: cmp.Or(*c.readURL, defaultReadURL),
		hc:      &http.Client{Timeout: client.DefaultAttemptTimeout, Transport: http.DefaultTransport.(*http.Transport).Clone()},
	}
	cc.Client, err = client.New(cc.apiURL, client.WithToken(token), client.WithReadURL(cc.readURL),
		client.WithHTTPClient(cc.hc), client.WithUserAgent("weft-cli/"+version))
	if err != nil {
		return nil, err
	}
	return cc, nil
}

// resolveToken is --token, else WEFT_TOKEN, else the token file of
// `weft dev` in $WEFT_DEV_DIR (default .weft/dev).
func (c *connFlags) resolveToken() (string, error) {
	if *c.token != "" {
		return strings.TrimSpace(*c.token), nil
	}
	path := filepath.Join(cmp.Or(c.env.getenv("WEFT_DEV_DIR"), defaultDevDir), "token")
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

// explain adds a hint to an error that reached no server at all.
func (c *cliClient) explain(err error) error {
	var ue *url.Error
	var answered *client.Error
	if errors.As(err, &ue) && !errors.As(err, &answered) {
		return fmt.Errorf("%w\n(is Weft up? the gateway is %s and the read API %s; `weft dev` runs both, or set --api-url / --read-url)",
			err, c.apiURL, c.readURL)
	}
	return err
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
