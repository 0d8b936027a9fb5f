package pgboot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// pidFileName is the lock file PostgreSQL keeps in a running cluster's
// folder: its first line is the postmaster's PID, its second the folder.
const pidFileName = "postmaster.pid"

// clearStale makes way for a start when the cluster's lock file survives a
// run that did not stop its server (a second Ctrl-C or a kill of
// `weft dev`): PostgreSQL refuses to start beside it with "lock file
// postmaster.pid already exists".
//
//   - The process it names is a postgres serving this folder: the server
//     is ours and left over; it is stopped (fast mode, immediate if that
//     fails), as Stop would have.
//   - The process is gone, or is something else (its PID reused, or another
//     cluster's postgres): the file is stale and removed.
//   - The file cannot be read as a lock file, or the process cannot be
//     identified: it is left to PostgreSQL, which judges it on start.
//
// The caller must own the folder: a second user of the same folder would
// have its server stopped. `weft dev` checks its fixed ports first, so a
// second `weft dev` of the same folder fails before it gets here.
func (i *Instance) clearStale(ctx context.Context) error {
	pidFile := filepath.Join(i.pgData(), pidFileName)
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgboot: read %s: %w", pidFile, err)
	}
	pid, ok := parsePIDFile(b)
	if !ok {
		return nil
	}
	switch processOf(ctx, pid, i.pgData()) {
	case processOurs:
		if err := i.run(ctx, "pg_ctl", "stop", "-D", i.pgData(), "-m", "fast", "-w", "-t", "60"); err == nil {
			return nil
		}
		if err := i.run(ctx, "pg_ctl", "stop", "-D", i.pgData(), "-m", "immediate", "-w", "-t", "60"); err != nil {
			return fmt.Errorf("pgboot: stop the server left running on %s (PID %d): %w", i.pgData(), pid, err)
		}
		return nil
	case processGone, processOther:
		if err := os.Remove(pidFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("pgboot: remove the stale %s: %w", pidFile, err)
		}
		return nil
	default:
		return nil
	}
}

// parsePIDFile returns the postmaster's PID from a lock file's first line.
func parsePIDFile(b []byte) (int, bool) {
	first, _, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(first)))
	return pid, err == nil && pid > 0
}

type process int

const (
	processUnknown process = iota // alive, but what it runs cannot be read
	processGone                   // no such process
	processOther                  // alive, and not a postgres of dataDir
	processOurs                   // a postgres started with -D dataDir
)

// processOf says whether pid is a postgres serving dataDir. pg_ctl starts
// the postmaster as `postgres -D <dataDir> …`, and the postmaster keeps
// that command line (its children retitle theirs).
func processOf(ctx context.Context, pid int, dataDir string) process {
	p, err := os.FindProcess(pid)
	if err != nil {
		return processGone
	}
	if err := p.Signal(syscall.Signal(0)); errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH) {
		return processGone
	}
	args, err := commandLine(ctx, pid)
	if err != nil || len(args) == 0 {
		return processUnknown
	}
	if name := filepath.Base(args[0]); name != "postgres" && name != "postmaster" {
		return processOther
	}
	for k := 1; k+1 < len(args); k++ {
		if args[k] == "-D" && filepath.Clean(args[k+1]) == filepath.Clean(dataDir) {
			return processOurs
		}
	}
	return processOther
}

// commandLine returns pid's arguments: from /proc where there is one
// (Linux), else from ps (split on spaces, so a path with a space does not
// match and the process counts as another's).
func commandLine(ctx context.Context, pid int) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err == nil {
		return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
	}
	if _, statErr := os.Stat("/proc/self"); statErr == nil {
		return nil, err // a /proc without this process's entry
	}
	out, err := exec.CommandContext(ctx, "ps", "-ww", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return nil, fmt.Errorf("pgboot: ps %d: %w", pid, err)
	}
	return strings.Fields(string(out)), nil
}
