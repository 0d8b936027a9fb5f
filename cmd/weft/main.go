// Command weft is Weft's one binary: every service, the local dev stack and
// the operator commands are subcommands of it.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/tracing"
)

// command is one subcommand: it parses its own flags from args.
type command struct {
	summary string
	run     func(ctx context.Context, env *environment, args []string) error
}

// environment is what every subcommand gets: its output streams, a logger
// and the process environment (a function, so tests can supply their own).
type environment struct {
	stdout io.Writer
	stderr io.Writer
	logger *slog.Logger
	getenv func(string) string
}

// errUsage is returned when -h printed a command's usage: main prints
// nothing more. It is the CLI's ErrUsage, so that main treats the -h of a
// CLI command and of a service alike.
var errUsage = cli.ErrUsage

func commands() map[string]command {
	return map[string]command{
		"bulk":      {"show or cancel a bulk job that weft runs cancel (pause, resume, ...) started", cliGroup("bulk", cli.BulkCommands())},
		"dev":       {"run the whole system in one process on embedded defaults", runDev},
		"engine":    {"run the engine (drives runs: rounds, timers, sweeps)", runEngine},
		"gateway":   {"run the signal gateway (REST, JSON-RPC and NATS ingress)", runGateway},
		"worker":    {"run an activity worker with the demo activities", runWorker},
		"health":    {"probe a URL (a service's /readyz); exit 1 unless it answers 2xx", runHealth},
		"maintain":  {"delete runs past their retention, create event-log partitions ahead", runMaintain},
		"migrate":   {"apply the Postgres schema (with --nats-url also create the streams)", runMigrate},
		"plan":      {"push, list, show, archive or restore registered plans, to start by reference (docs/cli.md)", cliGroup("plan", cli.PlanCommands())},
		"projector": {"run the snapshot projector with the read API and the web UI (projector rebuild: refold runs without a snapshot)", runProjector},
		"relay":     {"run the outbox relay (Postgres outbox to JetStream)", runRelay},
		"run":       {"start, show, watch a run, or list its events (docs/cli.md)", cliGroup("run", cli.RunCommands())},
		"runs":      {"list runs (runs ls), or act on every run a filter matches (runs cancel, pause, resume, retry-failed, rerun-failed)", cliGroup("runs", cli.RunsCommands())},
		"secrets":   {"write the compose topology's secrets into a folder (secrets init; docs/deploy.md)", commandGroup("secrets", secretsSubcommands())},
		"schedule":  {"create, list, show, pause, resume or delete schedules (docs/schedules.md)", cliGroup("schedule", cli.ScheduleCommands())},
		"signal":    {"send a signal to a run: PAUSE, RESUME, CANCEL, RETRY_STEP, or the signal a waitSignal step waits for", cliCommand(cli.Signal)},
		"trigger":   {"create, list or delete event triggers, or send one an event", cliGroup("trigger", cli.TriggerCommands())},
		"version":   {"print the version, the VCS revision and the Go version", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C drains (within each command's bound); once it has,
	// the signals are no longer caught, so a second one kills at once.
	go func() { <-ctx.Done(); stop() }()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "weft:", err)
		}
		os.Exit(cli.ExitCode(err))
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	env := &environment{
		stdout: stdout,
		stderr: stderr,
		// JSON lines; a record logged with a ctx that holds a span gets its
		// trace_id and span_id.
		logger: slog.New(tracing.NewLogHandler(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: logLevel(getenv("WEFT_LOG_LEVEL"))}))),
		getenv: getenv,
	}
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		return nil
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		usage(stderr, cmds)
		return fmt.Errorf("unknown command %q", args[0])
	}
	return cmd.run(ctx, env, args[1:])
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

// cliGroup is commandGroup of the CLI's subcommands subs (cliCommand).
func cliGroup(name string, subs map[string]cli.Command) func(context.Context, *environment, []string) error {
	cmds := make(map[string]command, len(subs))
	for n, c := range subs {
		cmds[n] = command{c.Summary, cliCommand(c.Run)}
	}
	return commandGroup(name, cmds)
}

// cliCommand runs the CLI's command run with env's streams and variables
// and the binary's version.
func cliCommand(run func(context.Context, *cli.Env, []string) error) func(context.Context, *environment, []string) error {
	return func(ctx context.Context, env *environment, args []string) error {
		return run(ctx, &cli.Env{Stdout: env.stdout, Stderr: env.stderr, Getenv: env.getenv, Version: version}, args)
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

func usage(w io.Writer, cmds map[string]command) {
	var b strings.Builder
	b.WriteString("Usage: weft <command> [flags]\n\nCommands:\n")
	writeCommands(&b, cmds)
	b.WriteString("\nRun 'weft <command> -h' for a command's flags.\n")
	_, _ = io.WriteString(w, b.String()) // usage is best effort: a closed stdout has no reader
}

// helpWidth is the width help text keeps to: a summary longer than the
// room left is wrapped, its lines aligned under its start.
const helpWidth = 80

// writeCommands writes cmds sorted by name, one a line, each summary in a
// column after the longest name, wrapped at helpWidth.
func writeCommands(b *strings.Builder, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	width := 0
	for name := range cmds {
		names = append(names, name)
		width = max(width, len(name))
	}
	sort.Strings(names)
	indent := strings.Repeat(" ", 2+width+2)
	for _, name := range names {
		for i, line := range wrap(cmds[name].summary, helpWidth-len(indent)) {
			if i == 0 {
				fmt.Fprintf(b, "  %-*s  %s\n", width, name, line)
				continue
			}
			fmt.Fprintf(b, "%s%s\n", indent, line)
		}
	}
}

// wrap splits text into lines of at most width bytes at spaces; a word
// longer than width gets a line of its own.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return slog.LevelInfo
	}
	return l
}

// version is set at build time with -ldflags "-X main.version=…"; when
// it is not, `weft version` prints the module's version from the build
// info.
var version = "dev"

// runVersion is `weft version`: the version, the VCS revision and the Go
// version the binary was built with (versionText).
func runVersion(_ context.Context, env *environment, args []string) error {
	if err := newFlags("version", env).parse(args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo() // nil without build info: versionText says so
	_, err := io.WriteString(env.stdout, versionText(version, bi))
	return err
}

// versionText is what `weft version` prints of a binary built with
// version stamped in (or "dev") and build info bi:
//
//	weft v1.2.0
//	  module    github.com/weftrun/weft v1.2.0
//	  revision  3f2a… (modified) 2026-11-27T10:00:00Z
//	  go        go1.25.0
//
// A binary of `go build` in a clone has the module version "(devel)" and
// the revision of the clone's HEAD, "modified" when the tree had changes;
// `go run`, tests and -buildvcs=false stamp no revision: it says so.
func versionText(version string, bi *debug.BuildInfo) string {
	if bi == nil {
		return "weft " + version + "\n  (no build info in this binary)\n"
	}
	if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	revision := cmp.Or(settings["vcs.revision"], "not stamped (go run, tests and -buildvcs=false stamp none)")
	if settings["vcs.modified"] == "true" {
		revision += " (modified)"
	}
	if t := settings["vcs.time"]; t != "" {
		revision += " " + t
	}
	return fmt.Sprintf("weft %s\n  module    %s %s\n  revision  %s\n  go        %s\n",
		version, cmp.Or(bi.Main.Path, "unknown"), cmp.Or(bi.Main.Version, "unknown"), revision, bi.GoVersion)
}
