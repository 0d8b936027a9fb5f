// Package pgboot starts a private PostgreSQL server from the binaries
// installed on the machine (initdb, pg_ctl, postgres). The test harness uses
// it when no server answers, and `weft dev` uses it when WEFT_DATABASE_URL is
// not set.
//
// The server listens on 127.0.0.1 only, on a port of its own, with unix
// sockets off and trust authentication for the superuser "postgres". PostgreSQL
// refuses to run as root, so when the caller is root the data folder is
// handed to the "postgres" system user and every command runs as that user
// through runuser. When that user cannot reach the folder (a clone in /root,
// mode 0700), the cluster lives in a folder of that user's under /var/tmp
// instead, recorded in the data folder (Config.RelocateRoot).
package pgboot

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoBinaries is returned when initdb and pg_ctl cannot be found. Its
// message says what to install.
var ErrNoBinaries = errors.New("pgboot: PostgreSQL server binaries (initdb, pg_ctl) not found: " +
	"install them (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql@15) " +
	"or point WEFT_DATABASE_URL / WEFT_TEST_DATABASE_URL at a running server")

// Config describes a private instance. The zero value is usable: a fresh
// temporary data folder and a free port.
type Config struct {
	// DataDir holds the cluster. An existing cluster is reused, so data
	// survives restarts; an empty or missing folder is initialised. Empty
	// means a new temporary folder, removed by Stop.
	DataDir string
	// Port to listen on; 0 picks a free one. A cluster that was started
	// before keeps no port: each Start chooses again unless Port is set.
	Port int
	// BinDir holds initdb and pg_ctl; empty means search PATH and the usual
	// Debian and Homebrew locations.
	BinDir string
	// RelocateRoot is where the cluster lives when running as root and the
	// postgres user cannot search a folder above DataDir (as it cannot
	// /root, mode 0700): in a folder of its own under RelocateRoot, owned
	// by that user, whose path is recorded in DataDir/relocated-to and
	// reused by every later Start. Empty means DefaultRelocateRoot. A
	// cluster already in DataDir is never moved.
	RelocateRoot string
	// Settings are more server settings, each "name=value" as postgres -c
	// takes it, without spaces ("shared_preload_libraries=pg_stat_statements"), set on
	// every start after pgboot's own.
	Settings []string
}

// Instance is a running private server. Stop it when done.
type Instance struct {
	dataDir string
	port    int
	binDir  string
	asUser  string
	tempDir bool
	logFile string
	// settings are Config.Settings.
	settings []string
}

// URL returns the connection string of the "postgres" database.
func (i *Instance) URL() string { return postgresURL(i.host()) }

// host is the instance's address.
func (i *Instance) host() string { return fmt.Sprintf("127.0.0.1:%d", i.port) }

// postgresURL is the superuser's URL of the "postgres" database on hosts
// (one, or a comma-separated list).
func postgresURL(hosts string) string {
	return "postgres://postgres@" + hosts + "/postgres?sslmode=disable"
}

// DataDir returns the cluster's folder: Config.DataDir, or the folder it
// was relocated to (Config.RelocateRoot).
func (i *Instance) DataDir() string { return i.dataDir }

// Start initialises the cluster when needed and starts the server, waiting
// until it accepts connections. A server of the same folder left running by
// an earlier run that did not Stop it is stopped first, and a stale lock
// file removed (clearStale): the caller must own the folder.
func Start(ctx context.Context, cfg Config) (*Instance, error) {
	bin, err := findBinDir(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	inst := &Instance{binDir: bin, port: cfg.Port, dataDir: cfg.DataDir, settings: cfg.Settings}
	if os.Geteuid() == 0 {
		inst.asUser = "postgres"
		if _, err := user.Lookup(inst.asUser); err != nil {
			return nil, fmt.Errorf("pgboot: running as root needs the %q system user to own the data folder: %w", inst.asUser, err)
		}
	}
	if inst.dataDir == "" {
		dir, err := os.MkdirTemp("", "weft-pg-")
		if err != nil {
			return nil, fmt.Errorf("pgboot: temp folder: %w", err)
		}
		inst.dataDir, inst.tempDir = dir, true
	}
	if inst.dataDir, err = filepath.Abs(inst.dataDir); err != nil {
		return nil, fmt.Errorf("pgboot: data folder: %w", err)
	}
	if inst.asUser != "" && !inst.tempDir {
		if inst.dataDir, err = place(inst.dataDir, cmp.Or(cfg.RelocateRoot, DefaultRelocateRoot), inst.asUser); err != nil {
			return nil, err
		}
	}
	if inst.port == 0 {
		if inst.port, err = freePort(ctx); err != nil {
			return nil, err
		}
	}
	inst.logFile = filepath.Join(inst.dataDir, "server.log")
	return inst.boot(ctx, inst.initdb)
}

// boot makes the cluster with create, when needed, and starts the server;
// on a failure it removes a temporary folder and returns the error.
func (i *Instance) boot(ctx context.Context, create func(context.Context) error) (*Instance, error) {
	if err := create(ctx); err != nil {
		i.cleanup()
		return nil, err
	}
	if err := i.start(ctx); err != nil {
		i.cleanup()
		return nil, err
	}
	return i, nil
}

// Stop shuts the server down (fast mode) and removes a temporary data
// folder. It is safe to call more than once.
func (i *Instance) Stop(ctx context.Context) error {
	if i == nil || i.dataDir == "" {
		return nil
	}
	err := i.run(ctx, "pg_ctl", "stop", "-D", i.pgData(), "-m", "fast", "-w")
	i.cleanup()
	if err != nil && !strings.Contains(err.Error(), "is not running") &&
		!strings.Contains(err.Error(), "does not exist") {
		return err
	}
	return nil
}

func (i *Instance) cleanup() {
	if i.tempDir {
		_ = os.RemoveAll(i.dataDir)
		i.dataDir = ""
	}
}

// pgData is the cluster inside the folder; the folder also holds the log.
func (i *Instance) pgData() string { return filepath.Join(i.dataDir, "data") }

func (i *Instance) initdb(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(i.pgData(), "PG_VERSION")); err == nil {
		return i.ensureOwner() // an existing cluster: reuse it
	}
	if err := os.MkdirAll(i.pgData(), 0o700); err != nil {
		return fmt.Errorf("pgboot: create %s: %w", i.pgData(), err)
	}
	if err := i.ensureOwner(); err != nil {
		return err
	}
	err := i.run(ctx, "initdb", "-D", i.pgData(), "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	return err
}

// start starts the server, first clearing what an earlier run that did not
// stop it left behind (clearStale).
func (i *Instance) start(ctx context.Context) error {
	if err := i.clearStale(ctx); err != nil {
		return err
	}
	args := []string{
		"-c listen_addresses=127.0.0.1",
		"-p " + strconv.Itoa(i.port),
		"-c unix_socket_directories=''",
		"-c max_connections=400",
		"-c fsync=on",
	}
	for _, s := range i.settings {
		args = append(args, "-c "+s)
	}
	opts := strings.Join(args, " ")
	err := i.run(ctx, "pg_ctl", "start", "-D", i.pgData(), "-w", "-t", "60",
		"-l", i.logFile, "-o", opts)
	if err != nil {
		log, _ := os.ReadFile(i.logFile)
		return fmt.Errorf("%w\nserver log:\n%s", err, tail(log, 2000))
	}
	return nil
}

// ensureOwner hands the folder to the postgres user when running as root.
func (i *Instance) ensureOwner() error {
	if i.asUser == "" {
		return nil
	}
	u, err := user.Lookup(i.asUser)
	if err != nil {
		return fmt.Errorf("pgboot: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err = filepath.Walk(i.dataDir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("pgboot: hand %s to %s: %w", i.dataDir, i.asUser, err)
	}
	// The postgres user must be able to reach the folder.
	return os.Chmod(i.dataDir, 0o755)
}

func (i *Instance) run(ctx context.Context, tool string, args ...string) error {
	path := filepath.Join(i.binDir, tool)
	var cmd *exec.Cmd
	if i.asUser != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", i.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = i.dataDir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgboot: %s %s: %w: %s", tool, args[0], err, tail(out.Bytes(), 2000))
	}
	return nil
}

// findBinDir locates initdb and pg_ctl.
func findBinDir(explicit string) (string, error) {
	if explicit != "" {
		if isExec(filepath.Join(explicit, "initdb")) && isExec(filepath.Join(explicit, "pg_ctl")) {
			return explicit, nil
		}
		return "", fmt.Errorf("%w (looked in %s)", ErrNoBinaries, explicit)
	}
	var candidates []string
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // a link to the installation's bin, which has the other tools (pg_basebackup)
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/local/opt/postgresql*/bin",
		"/opt/homebrew/opt/postgresql*/bin", "/usr/pgsql-*/bin"} {
		matches, _ := filepath.Glob(pattern)
		sort.Sort(sort.Reverse(sort.StringSlice(matches))) // newest major first
		candidates = append(candidates, matches...)
	}
	for _, dir := range candidates {
		if isExec(filepath.Join(dir, "initdb")) && isExec(filepath.Join(dir, "pg_ctl")) {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

func isExec(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func freePort(ctx context.Context) (int, error) {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgboot: find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
