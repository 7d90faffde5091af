package postgres_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence/persistencetest"
)

// privateServer is a PostgreSQL server of a test's own, on a loopback
// port, which the test may stop, crash and start again: the shared server
// of BRAID_TEST_POSTGRES_DSN must stay up for the other tests. It takes
// the server binaries of that shared server's machine (scripts/with-postgres.sh
// installs them), and runs them as the postgres user when the test runs as
// root, as PostgreSQL refuses root.
type privateServer struct {
	t     *testing.T
	bin   string
	data  string
	port  int
	runAs []string
	dsn   string
	opts  string // more server options, "-c name=value ..."
}

// newPrivateServer creates and starts a private server, with the server
// options opts ("-c name=value ..."); the test's end stops and removes it.
func newPrivateServer(t *testing.T, opts ...string) *privateServer {
	t.Helper()
	persistencetest.PostgresDSN(t) // the shared server's machine has the binaries
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(bins, func(i, j int) bool { return versionOf(bins[i]) < versionOf(bins[j]) })
	require.NotEmpty(t, bins, "no PostgreSQL server binaries: run under scripts/with-postgres.sh")
	s := &privateServer{t: t, bin: filepath.Dir(bins[len(bins)-1]), opts: strings.Join(opts, " ")}
	// Under /tmp, as scripts/with-postgres.sh does, not TMPDIR: the
	// postgres user must reach the folder (a TMPDIR may be root's own),
	// and the server's socket in it must fit PostgreSQL's 107-byte bound
	// (a TMPDIR may be long).
	data, err := os.MkdirTemp("/tmp", "braid-pgprivate-")
	require.NoError(t, err)
	s.data = data
	t.Cleanup(func() { _ = os.RemoveAll(data) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "the postgres user (scripts/with-postgres.sh makes it)")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(data, uid, gid))
		s.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.port = ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	s.run("initdb", "-D", filepath.Join(data, "db"), "-U", "braid", "--auth=trust", "-E", "UTF8")
	s.dsn = fmt.Sprintf("postgres://braid@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	s.start()
	t.Cleanup(func() { s.stop("immediate") })
	return s
}

// versionOf is the major version in a /usr/lib/postgresql/N/bin path.
func versionOf(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

func (s *privateServer) run(name string, args ...string) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	if s.runAs != nil {
		cmd = exec.Command(s.runAs[0], append(append(s.runAs[1:], filepath.Join(s.bin, name)), args...)...)
	}
	out, err := cmd.CombinedOutput()
	require.NoError(s.t, err, "%s: %s", name, out)
}

// start starts the server and returns once it takes connections.
func (s *privateServer) start() {
	s.t.Helper()
	s.run("pg_ctl", "-D", filepath.Join(s.data, "db"), "-l", filepath.Join(s.data, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s %s", s.port, s.data, s.opts), "start")
}

// stop stops the server with the shutdown mode given ("fast": every
// session is told it ends; "immediate": every process quits at once, as
// in a crash) and returns once it is down.
func (s *privateServer) stop(mode string) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "pg_ctl"), "-D", filepath.Join(s.data, "db"), "-m", mode, "-w", "stop")
	if s.runAs != nil {
		cmd = exec.Command(s.runAs[0], append(append(s.runAs[1:], cmd.Path), cmd.Args[1:]...)...)
	}
	_ = cmd.Run() // stopped already, at the test's end
}

// SPEC S3 (the crash and restart tests run a server of their own): the
// private server starts whatever TMPDIR is, here a folder only root may
// enter, whose path is too long for a server socket in it.
func TestPrivateServer_StartsWhateverTMPDIRIs(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), strings.Repeat("t", 100))
	require.NoError(t, os.Mkdir(tmp, 0o700))
	t.Setenv("TMPDIR", tmp)
	srv := newPrivateServer(t)
	conn, err := pgx.Connect(bg, srv.dsn)
	require.NoError(t, err)
	require.NoError(t, conn.Close(bg))
}
