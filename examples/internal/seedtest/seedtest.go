// Package seedtest helps the examples' tests run an example's main in a
// process of its own, to check what a user of the command sees: its exit
// status and its standard error.
package seedtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// argsEnv carries the arguments of main to the child process.
const argsEnv = "BRAID_SEEDTEST_MAIN_ARGS"

// RunMain runs main with args (as os.Args[1:]) in a child process, the
// test binary started again for the calling test alone, and returns its
// exit status and standard error. In the child, the first RunMain call
// runs main with the arguments the parent gave, and the process exits
// then: the calling test must call RunMain before anything else it does,
// and may call it several times.
func RunMain(t *testing.T, main func(), args ...string) (status int, stderr string) {
	t.Helper()
	status, _, stderr = runMain(t, main, args...)
	return status, stderr
}

// runMain is RunMain that also returns the standard output.
func runMain(t *testing.T, main func(), args ...string) (status int, stdout, stderr string) {
	t.Helper()
	if raw, ok := os.LookupEnv(argsEnv); ok {
		var a []string
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			t.Fatalf("seedtest: child arguments: %v", err)
		}
		os.Args = append([]string{os.Args[0]}, a...)
		main()
		os.Exit(0)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), argsEnv+"="+string(raw), "BRAID_ANSWER=")
	var outBuf, errBuf strings.Builder
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), outBuf.String(), errBuf.String()
	case err != nil:
		t.Fatalf("seedtest: running main: %v", err)
	}
	return 0, outBuf.String(), errBuf.String()
}

// CheckCommandLine checks what every example's command line promises:
// -h prints the usage and exits 0, with nothing on standard error; a
// mistyped flag, or an answer given as an argument instead of with
// -answer, or a -model spec that does not parse, exits 2 (a usage error:
// nothing ran) and says why. Like RunMain, it must come first in the
// calling test.
func CheckCommandLine(t *testing.T, main func()) {
	t.Helper()
	for _, c := range []struct {
		args   []string
		status int
		says   string // "": nothing on standard error
	}{
		{[]string{"-h"}, 0, ""},
		{[]string{"-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-answer", "y", "y"}, 2, `got the argument "y"`},
		{[]string{"-model", "nosuch:m"}, 2, `unknown provider "nosuch"`},
		{[]string{"-model", "gpt-4o"}, 2, `model "gpt-4o"`},
	} {
		status, stdout, stderr := runMain(t, main, c.args...)
		if status != c.status {
			t.Errorf("%q: exit status %d, want %d; standard error: %s", c.args, status, c.status, stderr)
		}
		if c.says == "" && stderr != "" || !strings.Contains(stderr, c.says) {
			t.Errorf("%q: standard error %q, want %q", c.args, stderr, c.says)
		}
		if c.says != "" && (strings.Count(stderr, c.says) != 1 || strings.Contains(stdout, c.says)) {
			t.Errorf("%q: the error is said once, on standard error; standard output %q, standard error %q", c.args, stdout, stderr)
		}
	}
}

// asMainEnv, set to "1", makes a test binary that calls MainIfAsked run
// the program instead of its tests (see Program).
const asMainEnv = "BRAID_SEEDTEST_AS_MAIN"

// MainIfAsked runs main, then exits, in a process that Program started;
// elsewhere it does nothing. Call it first in the example's TestMain.
func MainIfAsked(main func()) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
}

// Program runs the example in a new OS process (the test binary again,
// made the program by MainIfAsked) with args and no answer at hand (an
// empty BRAID_ANSWER and standard input), and returns the process's id
// and standard output. A run that fails fails the test, and so does one
// still running a minute before the test binary's deadline (-timeout; half
// the time left, if that is shorter), which is then killed: its output so
// far is in the failure.
func Program(t *testing.T, args ...string) (pid int, stdout string) {
	t.Helper()
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-min(time.Minute, time.Until(d)/2)))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "BRAID_ANSWER=")
	cmd.Stdin = strings.NewReader("")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s%s", args, err, out.String(), errOut.String())
	}
	return cmd.ProcessState.Pid(), out.String()
}
