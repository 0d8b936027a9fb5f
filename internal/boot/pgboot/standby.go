package pgboot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby starts a streaming standby of primary on a free port: a
// base backup of it (pg_basebackup -R, with the WAL written during the copy
// streamed too) in a new temporary folder, started as a hot standby that
// follows the primary's WAL from then on. It replicates asynchronously
// until the primary lists it in synchronous_standby_names. Stop removes it.
func StartStandby(ctx context.Context, primary *Instance) (*Instance, error) {
	dir, err := os.MkdirTemp("", "weft-pg-standby-")
	if err != nil {
		return nil, fmt.Errorf("pgboot: temp folder: %w", err)
	}
	inst := &Instance{binDir: primary.binDir, asUser: primary.asUser, dataDir: dir, tempDir: true}
	inst.logFile = filepath.Join(dir, "server.log")
	if inst.port, err = freePort(ctx); err != nil {
		inst.cleanup()
		return nil, err
	}
	return inst.boot(ctx, func(ctx context.Context) error {
		if err := inst.ensureOwner(); err != nil {
			return err
		}
		return inst.run(ctx, "pg_basebackup", "-D", inst.pgData(), "-h", "127.0.0.1",
			"-p", fmt.Sprint(primary.port), "-U", "postgres", "-X", "stream", "-R", "--no-sync")
	})
}

// Promote makes a standby the primary (pg_ctl promote) and returns once it
// accepts writes.
func (i *Instance) Promote(ctx context.Context) error {
	return i.run(ctx, "pg_ctl", "promote", "-D", i.pgData(), "-w", "-t", "60")
}

// syncWait bounds the wait for a standby to replicate synchronously.
const syncWait = time.Minute

// RequireSyncStandby makes the primary commit only once a standby has the
// commit (synchronous_standby_names = '*', reloaded) and returns once one
// does, so that no commit it acknowledges from then on can be lost with
// it: a promoted standby holds every one (RPO 0).
func (i *Instance) RequireSyncStandby(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, i.URL())
	if err != nil {
		return fmt.Errorf("pgboot: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	for _, sql := range []string{"ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("pgboot: %s: %w", sql, err)
		}
	}
	deadline := time.Now().Add(syncWait)
	for {
		var sync bool
		err := conn.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_stat_replication WHERE sync_state = 'sync'").Scan(&sync)
		switch {
		case err != nil:
			return fmt.Errorf("pgboot: replication state: %w", err)
		case sync:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("pgboot: no synchronous standby after %v", syncWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FailoverURL is the URL of the "postgres" database over every instance
// given, a primary and its standbys, with target_session_attrs=read-write:
// a client settles for whichever accepts writes, so that after a
// promotion its pool finds the new primary by itself.
func FailoverURL(instances ...*Instance) string {
	hosts := make([]string, len(instances))
	for k, in := range instances {
		hosts[k] = in.host()
	}
	return postgresURL(strings.Join(hosts, ",")) + "&target_session_attrs=read-write"
}

// killWait bounds the wait for a killed postmaster to be gone.
const killWait = 30 * time.Second

// Kill ends the server as a crash of its machine would: SIGKILL to the
// postmaster, which leaves its backends to notice and exit, and no
// checkpoint. It returns once the postmaster is gone. The folder stays
// for Stop (or a later Start, which recovers it) to clean up.
func (i *Instance) Kill() error {
	b, err := os.ReadFile(filepath.Join(i.pgData(), pidFileName))
	if err != nil {
		return fmt.Errorf("pgboot: kill: %w", err)
	}
	pid, ok := parsePIDFile(b)
	if !ok {
		return errors.New("pgboot: kill: unreadable " + pidFileName)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("pgboot: kill %d: %w", pid, err)
	}
	deadline := time.Now().Add(killWait)
	for running(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("pgboot: postmaster %d still there %v after SIGKILL", pid, killWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// running reports whether process pid runs: it exists and is not a
// zombie (a daemonised postmaster's parent is init, which in a container
// may never reap it).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: a zombie counts as running
	}
	// "pid (comm) state …", where comm may hold spaces and parentheses.
	i := bytes.LastIndex(b, []byte(") "))
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
