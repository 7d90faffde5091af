//go:build unix

package swarm_test

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence/persistencetest"
)

// racer is a started "race" helper.
type racer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   strings.Builder // everything it printed
	lines *bufio.Scanner
}

// startRacer starts a "race" helper of r and waits until it has loaded
// the interrupted session.
func startRacer(t *testing.T, r procRig) *racer {
	t.Helper()
	h := &racer{cmd: r.command("race")}
	var err error
	h.stdin, err = h.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := h.cmd.StdoutPipe()
	require.NoError(t, err)
	h.cmd.Stderr = h.cmd.Stdout
	require.NoError(t, h.cmd.Start())
	t.Cleanup(func() { _ = h.cmd.Process.Kill(); _ = h.cmd.Wait() })
	h.lines = bufio.NewScanner(stdout)
	for h.lines.Scan() {
		h.out.WriteString(h.lines.Text() + "\n")
		if h.lines.Text() == "ready" {
			return h
		}
	}
	t.Fatalf("the racer did not get ready:\n%s", h.out.String())
	return nil
}

// wait reads the rest of what h prints and returns its exit code.
func (h *racer) wait(t *testing.T) int {
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

// SPEC S4, S3, M5, M10: two processes hold the same swarm run, which
// waits for an answer (b's BeforeNodeCall gate, or b's tool after the
// gate), and resume it with the same answer at the same moment. Exactly
// one proceeds and finishes the run; the other gets a
// *persistence.ConflictError (ErrConflict) and runs nothing, and its
// retry is refused (the answer was taken) rather than taking the run: the answered
// node's model turns and its tool run once, the interrupt is not asked
// again, and a third process finds the run finished, as a run without
// the race ends.
func TestSwarmProcess_TwoProcessesRacingAResumeRunItOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	want, clean := cleanProcRun(t)
	wantRuns := countRuns(clean, "model:", "tool:")
	for _, store := range procStores {
		for _, at := range []string{"approval:b", "which:b"} {
			t.Run(store+"/"+at, func(t *testing.T) {
				if store == "postgres" {
					persistencetest.PostgresDSN(t) // skips, or fails under CI, without a server
				}
				rig := newProcRig(t, store)
				raw, err := rig.command("interrupt", "BRAID_SWARM_PROC_AT="+at).CombinedOutput()
				require.NoError(t, err, "%s", raw)
				before := readRunLog(t, rig.log)

				hs := []*racer{startRacer(t, rig), startRacer(t, rig)}
				for _, h := range hs { // both hold the interrupted run
					_, err := io.WriteString(h.stdin, "go\n")
					require.NoError(t, err)
				}
				codes := map[int]int{}
				var winner *racer
				for _, h := range hs {
					code := h.wait(t)
					codes[code]++
					if code == 0 {
						winner = h
					}
				}
				assert.Equal(t, map[int]int{0: 1, procConflict: 1}, codes, "one wins, one conflicts:\n%s\n%s", hs[0].out.String(), hs[1].out.String())
				all := readRunLog(t, rig.log)
				assert.Equal(t, wantRuns, countRuns(all, "model:", "tool:"), "every model turn and tool ran once: %v then %v", before, all[len(before):])
				assert.Equal(t, 1, countRuns(all, "raise:"+at)["raise:"+at], "%s was raised once", at)
				assert.Equal(t, 1, countRuns(all, "asked:"+at)["asked:"+at], "%s was asked once", at)

				require.NotNil(t, winner, "one wins:\n%s\n%s", hs[0].out.String(), hs[1].out.String())
				assert.Equal(t, want, resultOf(t, []byte(winner.out.String())), "the winner finishes the run")
				for _, h := range hs {
					if h != winner {
						assert.Contains(t, []string{"unknown-id", "not-interrupted"}, retryOf(h.out.String()),
							"the loser's retry goes on from the stored run, where its answer is spent:\n%s", h.out.String())
					}
				}

				assert.Equal(t, want, rig.runProc(t, "finish"), "a new process finds the run finished")
				assert.Equal(t, all, readRunLog(t, rig.log), "and runs nothing")
			})
		}
	}
}
