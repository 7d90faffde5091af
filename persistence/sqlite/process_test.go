package sqlite_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/sqlite"
)

// The tests below re-run this test binary as a helper process, with
// BRAID_SQLITE_HELPER naming what it does on the store in BRAID_SQLITE_DIR.
const helperEnv = "BRAID_SQLITE_HELPER"

var sharedKey = persistence.Key{SessionID: "shared", Kind: persistence.KindAgent, ID: "counter"}

// TestHelperProcess is not a test: it is the helper process's body.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("only a helper process")
	}
	if err := helper(mode, os.Getenv("BRAID_SQLITE_DIR")); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	// Exit without Close, whose checkpoint would fsync: the fsync tests
	// count the saves' fsyncs only (the committed saves are in the WAL).
	os.Exit(0)
}

// helper runs mode:n, n saves of the kind mode names.
func helper(mode, dir string) error {
	mode, arg, _ := strings.Cut(mode, ":")
	n, err := strconv.Atoi(arg)
	if err != nil {
		return err
	}
	s, err := sqlite.Open(bg, sqlite.Config{Dir: dir, NoFsync: mode == "nofsync"})
	if err != nil {
		return err
	}
	if mode == "increment" {
		if err := persistencetest.Increment(s, sharedKey, n, false); err != nil {
			return err
		}
		return s.Close()
	}
	durable := mode == "durable" || mode == "nofsync" || mode == "marked"
	if mode != "open" {
		for i := range n {
			k := persistence.Key{SessionID: "fsync", Kind: persistence.KindAgent, ID: strconv.Itoa(i)}
			if _, err := s.Save(bg, persistence.SaveOptions{Durable: durable}, persistence.Change{
				Key: k, Data: json.RawMessage(`{"n":1}`), Messages: []json.RawMessage{json.RawMessage(`{"m":1}`)}}); err != nil {
				return err
			}
			if mode == "marked" { // the save returned: a write strace sees
				fmt.Fprintf(os.Stdout, "%s %d\n", savedMarker, i)
			}
		}
	}
	if mode == "sync" {
		return s.Sync(bg)
	}
	return nil
}

func helperCmd(t *testing.T, mode, dir string, prefix ...string) *exec.Cmd {
	args := append(prefix, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "BRAID_SQLITE_DIR="+dir)
	cmd.Stderr = os.Stderr
	return cmd
}

// SPEC S2, I9: non-durable saves do not fsync; each durable save does
// (a WAL fsync, at synchronous=FULL); Sync after non-durable saves does;
// NoFsync never does. Counted by strace over a helper process that starts
// from a copy of one database, with a baseline run that only opens it.
func TestDurability_FsyncCounts(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is not on PATH under CI=true: install it to count fsyncs")
		}
		t.Skip("strace is not on PATH")
	}
	template := t.TempDir()
	s := open(t, template, sqlite.Config{})
	require.NoError(t, s.Close())

	count := func(mode string) int {
		dir := t.TempDir()
		for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal"} {
			if b, err := os.ReadFile(filepath.Join(template, name)); err == nil {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
			}
		}
		out := filepath.Join(t.TempDir(), "strace.txt")
		cmd := helperCmd(t, mode, dir, strace, "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", out)
		if err := cmd.Run(); err != nil {
			if os.Getenv("CI") != "true" {
				t.Skipf("strace could not run the helper (ptrace not allowed?): %v", err)
			}
			t.Fatalf("strace %s: %v", mode, err)
		}
		f, err := os.Open(out)
		require.NoError(t, err)
		defer f.Close()
		return fsyncCalls(t, f)
	}
	const n = 10
	base, normal, normal3 := count("open:0"), count(fmt.Sprintf("normal:%d", n)), count(fmt.Sprintf("normal:%d", 3*n))
	durable, sync, nofsync := count(fmt.Sprintf("durable:%d", n)), count(fmt.Sprintf("sync:%d", n)), count(fmt.Sprintf("nofsync:%d", n))
	t.Logf("fsync+fdatasync calls: open only %d; %d non-durable saves %d, %d of them %d; %d durable %d; %d non-durable then Sync %d; %d durable with NoFsync %d",
		base, n, normal, 3*n, normal3, n, durable, n, sync, n, nofsync)
	// Starting a fresh WAL syncs its header (and the folder) once, however
	// many saves follow.
	assert.LessOrEqual(t, normal-base, 2, "non-durable saves")
	assert.Equal(t, normal, normal3, "non-durable saves: fsyncs must not grow with the saves")
	assert.GreaterOrEqual(t, durable-base, n, "durable saves")
	assert.GreaterOrEqual(t, sync-normal, 1, "Sync")
	assert.Equal(t, base, nofsync, "NoFsync")
}

const savedMarker = "braid-durable-save-returned"

// SPEC S2, I9: every durable save returns only after an fsync of the WAL
// file that began after the save's last write to the WAL. Traced by strace
// (with file names) over a helper process that marks each return with a
// write to its standard output.
func TestDurability_EachDurableSaveFsyncsTheWALAfterItsWrites(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is not on PATH under CI=true: install it to trace fsyncs")
		}
		t.Skip("strace is not on PATH")
	}
	const n = 8
	out := filepath.Join(t.TempDir(), "strace.txt")
	cmd := helperCmd(t, fmt.Sprintf("marked:%d", n), t.TempDir(), strace, "-f", "-y", "-s", "64",
		"-e", "trace=write,pwrite64,fsync,fdatasync", "-o", out)
	if err := cmd.Run(); err != nil {
		if os.Getenv("CI") != "true" {
			t.Skipf("strace could not run the helper (ptrace not allowed?): %v", err)
		}
		t.Fatalf("strace: %v", err)
	}
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	events := tracedCalls(t, f)
	lastWrite, lastSync, marks := -1, -1, 0 // indexes into events
	for i, e := range events {
		switch {
		case e.call == "pwrite64" && strings.HasSuffix(e.file, sqlite.FileName+"-wal"):
			lastWrite = i
		case (e.call == "fsync" || e.call == "fdatasync") && strings.HasSuffix(e.file, sqlite.FileName+"-wal"):
			if e.began > events[max(lastWrite, 0)].ended || lastWrite < 0 {
				lastSync = i
			}
		case e.call == "write" && strings.Contains(e.args, savedMarker):
			require.GreaterOrEqual(t, lastWrite, 0, "a durable save returned without writing the WAL")
			assert.Greater(t, lastSync, lastWrite, "durable save %d returned without an fsync of the WAL after its last WAL write", marks)
			marks++
		}
	}
	assert.Equal(t, n, marks, "saves traced")
}

// tracedCall is one system call of an strace -f -y log: the file of its
// first argument, and the log lines where it began and ended.
type tracedCall struct {
	call, file, args string
	began, ended     int
}

// tracedCalls reads an strace -f -y log in the order the calls ended,
// joining a call that strace split (unfinished, then resumed).
func tracedCalls(t *testing.T, r io.Reader) []tracedCall {
	var out []tracedCall
	open := map[string]tracedCall{} // by pid
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 0; sc.Scan(); line++ {
		pid, rest, _ := strings.Cut(sc.Text(), " ")
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "<...") { // "<... fsync resumed>) = 0"
			if c, ok := open[pid]; ok {
				delete(open, pid)
				c.ended = line
				out = append(out, c)
			}
			continue
		}
		name, args, ok := strings.Cut(rest, "(")
		if !ok || strings.HasPrefix(rest, "+++") || strings.HasPrefix(rest, "---") {
			continue
		}
		c := tracedCall{call: name, args: args, began: line, ended: line}
		if _, after, ok := strings.Cut(args, "<"); ok {
			c.file, _, _ = strings.Cut(after, ">")
		}
		if strings.Contains(rest, "<unfinished ...>") {
			open[pid] = c
			continue
		}
		out = append(out, c)
	}
	require.NoError(t, sc.Err())
	return out
}

// fsyncCalls sums the calls column of strace -c's fsync and fdatasync rows.
func fsyncCalls(t *testing.T, r io.Reader) int {
	n := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 5 && (f[len(f)-1] == "fsync" || f[len(f)-1] == "fdatasync") {
			c, err := strconv.Atoi(f[3])
			require.NoError(t, err, sc.Text())
			n += c
		}
	}
	require.NoError(t, sc.Err())
	return n
}

// SPEC S2, S4: processes sharing a folder lose no update: three helper
// processes and this one increment one counter, retrying on conflict.
func TestProcesses_ShareFolder_LoseNoUpdate(t *testing.T) {
	const procs, each = 3, 25
	dir := t.TempDir()
	s := open(t, dir, sqlite.Config{})
	_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: sharedKey, Data: json.RawMessage(`{"n":0}`)})
	require.NoError(t, err)
	var cmds []*exec.Cmd
	for range procs {
		cmd := helperCmd(t, fmt.Sprintf("increment:%d", each), dir)
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	require.NoError(t, persistencetest.Increment(s, sharedKey, each, true))
	for _, cmd := range cmds {
		require.NoError(t, cmd.Wait())
	}
	r, err := s.Load(bg, sharedKey)
	require.NoError(t, err)
	assert.Equal(t, int64((procs+1)*each+1), r.Version)
	assert.JSONEq(t, fmt.Sprintf(`{"n":%d}`, (procs+1)*each), string(r.Data))
	assert.Len(t, r.Messages, (procs+1)*each)
}
