//go:build unix

package swarm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/internal/childproc"
	"github.com/braidhq/braid/persistence/persistencetest"
)

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

				hs := []*childproc.Child{childproc.Start(t, rig.command("race")), childproc.Start(t, rig.command("race"))}
				for _, h := range hs { // both hold the interrupted run
					h.Send(t, "go")
				}
				codes := map[int]int{}
				var winner *childproc.Child
				for _, h := range hs {
					code := h.Wait(t)
					codes[code]++
					if code == 0 {
						winner = h
					}
				}
				assert.Equal(t, map[int]int{0: 1, procConflict: 1}, codes, "one wins, one conflicts:\n%s\n%s", hs[0].Output(), hs[1].Output())
				all := readRunLog(t, rig.log)
				assert.Equal(t, wantRuns, countRuns(all, "model:", "tool:"), "every model turn and tool ran once: %v then %v", before, all[len(before):])
				assert.Equal(t, 1, countRuns(all, "raise:"+at)["raise:"+at], "%s was raised once", at)
				assert.Equal(t, 1, countRuns(all, "asked:"+at)["asked:"+at], "%s was asked once", at)

				require.NotNil(t, winner, "one wins:\n%s\n%s", hs[0].Output(), hs[1].Output())
				assert.Equal(t, want, resultOf(t, []byte(winner.Output())), "the winner finishes the run")
				for _, h := range hs {
					if h != winner {
						assert.Contains(t, []string{"unknown-id", "not-interrupted"}, retryOf(h.Output()),
							"the loser's retry goes on from the stored run, where its answer is spent:\n%s", h.Output())
					}
				}

				assert.Equal(t, want, rig.runProc(t, "finish"), "a new process finds the run finished")
				assert.Equal(t, all, readRunLog(t, rig.log), "and runs nothing")
			})
		}
	}
}
