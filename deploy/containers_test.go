package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// container is how compose.yaml runs a service's process, emulated with
// setpriv (util-linux): its user and group, the only capabilities it
// keeps (comma-separated, "" for none) and the environment its image sets.
type container struct {
	uid, gid int
	caps     string
	imageEnv []string
}

// dockerDefaultCaps are the capabilities Docker Engine gives a container
// that neither drops nor adds any: the postgres and nats services.
const dockerDefaultCaps = "chown,dac_override,fowner,fsetid,kill,setgid,setuid,setpcap," +
	"net_bind_service,net_raw,sys_chroot,mknod,audit_write,setfcap"

// The services of compose.yaml, as containers.
var (
	// secretsService: user "0:0", cap_drop ALL, cap_add CHOWN; the weft
	// image is distroless (SSL_CERT_FILE is all it sets beside PATH).
	secretsService = container{0, 0, "chown", []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}}
	// weftService: the image's user nonroot (65532), cap_drop ALL.
	weftService = container{65532, 65532, "", []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}}
	// natsService: nats:2.12-alpine, as root; the image sets NATS_SERVER to
	// its version.
	natsService = container{0, 0, dockerDefaultCaps, []string{"NATS_SERVER=2.12.15"}}
	// postgresService: postgres:15, whose entrypoint starts as root.
	postgresService = container{0, 0, dockerDefaultCaps, []string{"PG_MAJOR=15", "PG_VERSION=15.10-1.pgdg120+1",
		"PGDATA=/var/lib/postgresql/data", "LANG=en_US.utf8", "GOSU_VERSION=1.17"}}
)

// command returns path with args run as c, with the image's environment,
// PATH, and env, which wins over both.
func (c container) command(t *testing.T, path string, args []string, env ...string) *exec.Cmd {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	require.NoError(t, err, "the container tests run processes as containers with setpriv (util-linux)")
	caps := "-all"
	if c.caps != "" {
		caps += ",+" + strings.ReplaceAll(c.caps, ",", ",+")
	}
	argv := []string{"--reuid=" + strconv.Itoa(c.uid), "--regid=" + strconv.Itoa(c.gid), "--clear-groups", "--no-new-privs",
		"--inh-caps=" + caps, "--ambient-caps=" + caps, "--bounding-set=" + caps, "--", path}
	cmd := exec.CommandContext(t.Context(), setpriv, append(argv, args...)...)
	cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH")}, c.imageEnv...), env...)
	return cmd
}

// run runs path as c and returns its output, failing the test unless it
// exits 0.
func (c container) run(t *testing.T, path string, args []string, env ...string) string {
	t.Helper()
	out, err := c.command(t, path, args, env...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", path, args, out)
	return string(out)
}

// requireRoot skips a test that starts processes as other users unless
// it runs as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running processes as the containers' users needs root")
	}
}

// newSecretsVolume returns a folder like a fresh Docker volume's (root's,
// mode 0755) whose ancestors others may search, as a volume's mount
// point is to the services that mount it.
func newSecretsVolume(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	for dir := parent; dir != filepath.Dir(dir) && strings.HasPrefix(dir, os.TempDir()) && dir != os.TempDir(); dir = filepath.Dir(dir) {
		require.NoError(t, os.Chmod(dir, 0o711))
	}
	volume := filepath.Join(parent, "secrets")
	require.NoError(t, os.Mkdir(volume, 0o755))
	require.NoError(t, os.Chmod(volume, 0o755))
	return volume
}

// shim writes an executable script name into a new folder, which it
// returns: it records its arguments, one a line, then the environment
// lines that start with envPrefix, into record.
func shim(t *testing.T, name, record, envPrefix, extra string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	script := "#!/bin/sh\nset -eu\n{ printf '%s\\n' \"$@\"; env | grep '^" + envPrefix + "' | sort; " + extra + "; } >" + record + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755)) //nolint:gosec // an executable
	return dir
}

// readSecret returns the secret in file, without its line break.
func readSecret(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file) //nolint:gosec // the test's own
	require.NoError(t, err)
	return strings.TrimRight(string(data), "\n")
}

// A cold `docker compose up`, then a warm one, as the containers run: the
// secrets service (`weft secrets init --owner 65532:65532` as root with
// CAP_CHOWN only) writes the volume twice; the nats and postgres
// entrypoints (root, Docker's default capabilities, the official images'
// environment, NATS_SERVER among it) export every password from their
// folders and exec the server; every weft service (65532, no
// capabilities) reads each of its files from its own folder.
func TestContainersStartOnTheSecretsVolume(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	bin := buildBinaries(t).weft
	volume := newSecretsVolume(t)
	initArgs := []string{"secrets", "init", "--dir", volume, "--owner", "65532:65532"}
	out := secretsService.run(t, bin, initArgs)
	require.Contains(t, out, "The admin API key", "the cold start prints the admin key")
	out = secretsService.run(t, bin, initArgs)
	require.NotContains(t, out, "The admin API key", "the warm start keeps every file")

	record := filepath.Join(t.TempDir(), "record")
	natsPath := shim(t, "nats-server", record, "WEFT_NATS_", "true")
	natsService.run(t, "/bin/sh", []string{"nats-entrypoint.sh", "-c", "/etc/nats/nats.conf"},
		"WEFT_SECRETS_DIR="+filepath.Join(volume, "nats"), "PATH="+natsPath+":"+os.Getenv("PATH"))
	want := []string{"-c", "/etc/nats/nats.conf"}
	for _, u := range natsUsers {
		want = append(want, "WEFT_NATS_"+strings.ToUpper(u)+"_PASSWORD="+readSecret(t, filepath.Join(volume, "nats", u+"-password")))
	}
	require.Equal(t, sortedTail(want, 2), strings.Split(readSecret(t, record), "\n"), "nats-server is run with every password")

	pgPath := shim(t, "docker-entrypoint.sh", record, "WEFT_PG_", `cat "$POSTGRES_PASSWORD_FILE"`)
	postgresService.run(t, "/bin/bash", []string{"postgres/entrypoint.sh", "postgres"},
		"WEFT_SECRETS_DIR="+filepath.Join(volume, "postgres"), "PATH="+pgPath+":"+os.Getenv("PATH"),
		"POSTGRES_PASSWORD_FILE="+filepath.Join(volume, "postgres", "postgres-password"))
	want = []string{"postgres"}
	for _, role := range []string{"migrator", "gateway", "engine", "relay", "projector"} {
		want = append(want, "WEFT_PG_"+strings.ToUpper(role)+"_PASSWORD="+readSecret(t, filepath.Join(volume, "postgres", "pg-"+role+"-password")))
	}
	want = append(sortedTail(want, 1), readSecret(t, filepath.Join(volume, "postgres", "postgres-password")))
	require.Equal(t, want, strings.Split(readSecret(t, record), "\n"), "postgres is run with every password")

	read := 0
	for _, svc := range loadProject(t).Services {
		for _, m := range svc.Volumes {
			if svc.Image != "weft:local" || m.Source != "secrets" || m.Volume == nil || m.Volume.Subpath == "" {
				continue
			}
			for _, v := range []string{"PGPASSFILE", "WEFT_NATS_PASSWORD_FILE", "WEFT_TASK_KEY_FILE", "WEFT_API_KEYS_FILE"} {
				if f := env(svc, v); f != "" {
					weftService.run(t, "/bin/cat", []string{filepath.Join(volume, m.Volume.Subpath, strings.TrimPrefix(f, m.Target+"/"))})
					read++
				}
			}
		}
	}
	require.Greater(t, read, 10, "every weft service's files")
}

// As the secrets service (root, CAP_CHOWN only), `weft secrets init`
// repairs a volume an older build left: folders given to the services'
// user (mode 0700, which the service cannot search), and a reader's copy
// missing, which it makes from a secret that user owns.
func TestSecretsInitRepairsTheVolumeAsTheContainer(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	bin := buildBinaries(t).weft
	volume := newSecretsVolume(t)
	initArgs := []string{"secrets", "init", "--dir", volume, "--owner", "65532:65532"}
	secretsService.run(t, bin, initArgs)
	for _, dir := range []string{"postgres", "relay"} {
		require.NoError(t, os.Chown(filepath.Join(volume, dir), 65532, 65532))
		require.NoError(t, os.Chmod(filepath.Join(volume, dir), 0o700))
	}
	require.NoError(t, os.Remove(filepath.Join(volume, "relay", "pgpass")))

	secretsService.run(t, bin, initArgs)
	for _, file := range []string{"relay/pgpass", "postgres/pg-relay-password"} {
		info, err := os.Stat(filepath.Join(volume, file))
		require.NoError(t, err)
		st, ok := info.Sys().(*syscall.Stat_t)
		require.True(t, ok)
		require.Equal(t, []uint32{65532, 65532}, []uint32{st.Uid, st.Gid}, "%s is the services' user's", file)
	}
	pgpass := weftService.run(t, "/bin/cat", []string{filepath.Join(volume, "relay", "pgpass")})
	require.Equal(t, "*:*:*:weft_relay:"+readSecret(t, filepath.Join(volume, "postgres", "pg-relay-password"))+"\n", pgpass)
}

// sortedTail returns s with its elements from i on sorted, as `sort` sorts
// lines of one form.
func sortedTail(s []string, i int) []string {
	out := slices.Clone(s)
	slices.Sort(out[i:])
	return out
}

// On a Docker Engine before 26, which ignores a volume's subpath, the nats
// and postgres entrypoints are given the whole secrets volume: they say
// which engine is needed and exit 1, before they run the server.
func TestEntrypointsReportTheWholeSecretsVolume(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	volume := newSecretsVolume(t)
	secretsService.run(t, buildBinaries(t).weft, []string{"secrets", "init", "--dir", volume, "--owner", "65532:65532"})
	record := filepath.Join(t.TempDir(), "record")
	for _, c := range []struct {
		svc          container
		shell, entry string
		server       string
	}{{natsService, "/bin/sh", "nats-entrypoint.sh", "nats-server"}, {postgresService, "/bin/bash", "postgres/entrypoint.sh", "docker-entrypoint.sh"}} {
		path := shim(t, c.server, record, "WEFT_", "true")
		out, err := c.svc.command(t, c.shell, []string{c.entry}, "WEFT_SECRETS_DIR="+volume, "PATH="+path+":"+os.Getenv("PATH")).CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, c.entry)
		require.Equal(t, 1, exit.ExitCode(), "%s: %s", c.entry, out)
		require.Contains(t, string(out), "Docker Engine 26 or newer is needed for volume subpath", c.entry)
		require.NoFileExists(t, record, "%s does not run the server", c.entry)
	}
}
