// Command weft is Weft's one binary: every service, the local dev stack and
// the operator commands are subcommands of it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/weftrun/weft/internal/tracing"
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

var errUsage = errors.New("usage")

func commands() map[string]command {
	return map[string]command{
		"dev":       {"run the whole system in one process on embedded defaults", runDev},
		"engine":    {"run the engine (drives runs: rounds, timers, sweeps)", runEngine},
		"gateway":   {"run the signal gateway (REST, JSON-RPC and NATS ingress)", runGateway},
		"worker":    {"run an activity worker with the demo activities", runWorker},
		"health":    {"probe a URL (a service's /readyz); exit 1 unless it answers 2xx", runHealth},
		"maintain":  {"delete runs past the retention and create event-log partitions ahead", runMaintain},
		"migrate":   {"apply the Postgres schema (with --nats-url, also create the streams)", runMigrate},
		"projector": {"run the snapshot projector with the read API and the web UI (projector rebuild: refold runs without a snapshot)", runProjector},
		"relay":     {"run the outbox relay (Postgres outbox to JetStream)", runRelay},
		"run":       {"start, show, watch a run, or list its events (docs/cli.md)", commandGroup("run", runSubcommands())},
		"runs":      {"list runs (runs ls)", commandGroup("runs", runsSubcommands())},
		"schedule":  {"create, list, show, pause, resume or delete schedules (docs/schedules.md)", commandGroup("schedule", scheduleSubcommands())},
		"signal":    {"send a signal to a run: PAUSE, RESUME, CANCEL, RETRY_STEP or a step's", runSignal},
		"trigger":   {"create, list or delete event triggers, or send one an event", commandGroup("trigger", triggerSubcommands())},
		"version":   {"print the version", runVersion},
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
		os.Exit(exitCode(err))
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

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for name := range cmds {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("Usage: weft <command> [flags]\n\nCommands:\n")
	for _, name := range names {
		fmt.Fprintf(&b, "  %-8s %s\n", name, cmds[name].summary)
	}
	b.WriteString("\nRun 'weft <command> -h' for a command's flags.\n")
	_, _ = io.WriteString(w, b.String()) // usage is best effort: a closed stdout has no reader
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return slog.LevelInfo
	}
	return l
}

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func runVersion(_ context.Context, env *environment, _ []string) error {
	_, err := fmt.Fprintln(env.stdout, "weft", version)
	return err
}
