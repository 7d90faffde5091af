package childproc

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Child is a started helper process; its output and error output are
// read together.
type Child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	out   strings.Builder
}

// Start starts cmd and returns once it printed the line "ready"; the
// test fails if it ends first. The test's end kills it if it still runs.
func Start(t *testing.T, cmd *exec.Cmd) *Child {
	t.Helper()
	h := &Child{cmd: cmd}
	var err error
	h.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	h.lines = bufio.NewScanner(stdout)
	for h.lines.Scan() {
		h.out.WriteString(h.lines.Text() + "\n")
		if h.lines.Text() == "ready" {
			return h
		}
	}
	t.Fatalf("the helper process did not get ready:\n%s", h.out.String())
	return nil
}

// Send writes line, and a newline, to the child's input.
func (h *Child) Send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(h.stdin, line+"\n")
	require.NoError(t, err)
}

// Wait reads the rest of what the child prints and returns its exit
// code; the test fails if a signal ended it.
func (h *Child) Wait(t *testing.T) int {
	t.Helper()
	for h.lines.Scan() {
		h.out.WriteString(h.lines.Text() + "\n")
	}
	err := h.cmd.Wait()
	if err == nil {
		return 0
	}
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v\n%s", err, h.out.String())
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok && !ws.Signaled(), "%v\n%s", err, h.out.String())
	return exit.ExitCode()
}

// Output is everything the child printed so far.
func (h *Child) Output() string { return h.out.String() }
