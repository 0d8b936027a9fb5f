package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/natsboot"
	"github.com/weftrun/weft/pkg/weftest"
)

// natsPassword has characters a URL must escape.
const natsPassword = "p@ss:w/rd%20?#"

// startNATSWithUser starts an embedded server that accepts the user worker
// with natsPassword only, and returns its host:port.
func startNATSWithUser(t *testing.T) string {
	t.Helper()
	srv, err := natsboot.Start(natsboot.Config{StoreDir: t.TempDir(), Port: -1,
		Users: []natsboot.User{{Name: "worker", Password: natsPassword}}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv.Addr().String()
}

// writeSecret writes content into a file of mode 0600 and returns its path.
func writeSecret(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// A service given its user in WEFT_NATS_URL and its password in
// WEFT_NATS_PASSWORD_FILE connects to a server that requires the
// password, and is ready; without the file it is refused, and the error
// shows no password.
func TestServiceReadsItsNATSPasswordFromAFile(t *testing.T) {
	t.Parallel()
	addr := startNATSWithUser(t)
	ops := "127.0.0.1:" + strconv.Itoa(weftest.FreePort(t))
	var errOut weftest.Buffer
	stop := runInBackground(t, []string{"worker"}, &errOut, map[string]string{
		"WEFT_NATS_URL":           "nats://worker@" + addr,
		"WEFT_NATS_PASSWORD_FILE": writeSecret(t, natsPassword+"\n"),
		"WEFT_WORKER_OPS_ADDR":    ops,
	})
	require.Eventually(t, func() bool {
		_, status, _ := readiness(t, "http://"+ops)
		return status == http.StatusOK
	}, time.Minute, 20*time.Millisecond, "the worker connects and is ready: %s", &errOut)
	require.NoError(t, stop())

	r := weft(t, map[string]string{"WEFT_NATS_URL": "nats://worker@" + addr, "WEFT_WORKER_OPS_ADDR": "off"}, "worker")
	require.ErrorContains(t, r.err, "connect to NATS at nats://worker@"+addr+" as worker")
	r = weft(t, map[string]string{"WEFT_NATS_URL": "nats://worker:wrong@" + addr, "WEFT_WORKER_OPS_ADDR": "off"}, "worker")
	require.ErrorContains(t, r.err, "nats://worker:xxxxx@"+addr)
	require.NotContains(t, r.err.Error(), "wrong")
}

// The file's password goes into each URL of the list, in place of one the
// URL gives, whichever flag comes first; the file's last line break is
// not part of it.
func TestNATSPasswordFileFillsEveryURL(t *testing.T) {
	t.Parallel()
	file := writeSecret(t, "s3cret/x\r\n")
	for _, args := range [][]string{
		{"--nats-url", "nats://engine@a:4222,nats://engine:old@b:4222", "--nats-password-file", file},
		{"--nats-password-file", file, "--nats-url", "nats://engine@a:4222,nats://engine:old@b:4222"},
	} {
		f := newFlags("test", &environment{stderr: &weftest.Buffer{}, getenv: envOf(nil)})
		got := natsFlag(f)
		require.NoError(t, f.parse(args))
		require.Equal(t, "nats://engine:s3cret%2Fx@a:4222,nats://engine:s3cret%2Fx@b:4222", *got, args)
	}
	f := newFlags("test", &environment{stderr: &weftest.Buffer{}, getenv: envOf(map[string]string{"WEFT_NATS_URL": "nats://engine:pw@a:4222"})})
	got := natsFlag(f)
	require.NoError(t, f.parse(nil))
	require.Equal(t, "nats://engine:pw@a:4222", *got, "without a file, the URL as given")
}

// A password file needs a user in every URL and a password in the file,
// and an unreadable file is named.
func TestNATSPasswordFileRefusals(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"WEFT_NATS_URL": "nats://a:4222", "WEFT_NATS_PASSWORD_FILE": writeSecret(t, "pw")},
			"the NATS URL nats://a:4222 names no user for the password file"},
		{map[string]string{"WEFT_NATS_URL": "nats://u@a:4222", "WEFT_NATS_PASSWORD_FILE": writeSecret(t, "\n")},
			"is empty"},
		{map[string]string{"WEFT_NATS_URL": "nats://u@a:4222", "WEFT_NATS_PASSWORD_FILE": missing},
			"NATS password file: open " + missing},
	} {
		r := weft(t, c.env, "worker")
		require.ErrorContains(t, r.err, "WEFT_NATS_PASSWORD_FILE=")
		require.ErrorContains(t, r.err, c.want)
	}
}

// A Postgres URL without a password takes it from the file PGPASSFILE
// names, as libpq does: pgx reads it when the pool's config is parsed.
// (Not parallel: PGPASSFILE is the process's environment.)
func TestDatabasePasswordFromPGPASSFILE(t *testing.T) {
	t.Setenv("PGPASSFILE", writeSecret(t, "postgres:5432:weft:weft_engine:from-the-file\n*:*:*:weft_relay:relay-pw\n"+`*:*:*:weft_projector:a\:b\\c`+"\n"))
	for url, want := range map[string]string{
		"postgres://weft_engine@postgres:5432/weft":        "from-the-file",
		"postgres://weft_relay@db.example:6543/other":      "relay-pw",
		"postgres://weft_projector@postgres:5432/weft":     `a:b\c`, // escaped, as secrets init writes it
		"postgres://weft_engine:in-url@postgres:5432/weft": "in-url",
		"postgres://weft_gateway@postgres:5432/weft":       "",
	} {
		cfg, err := poolConfig(url)
		require.NoError(t, err, url)
		require.Equal(t, want, cfg.ConnConfig.Password, url)
	}
}
