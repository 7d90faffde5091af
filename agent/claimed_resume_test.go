package agent_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/internal/twostores"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

// SPEC S4, S6, I7: two runtimes (two processes) hold the same agent,
// interrupted at one tool's approval, and both answer it. The first's
// resume is taken (its claim is saved) and the approved tool runs; the
// second gets ErrConflict and takes the stored run, which is that claim:
// every interrupt answered, the tool cycle pending, as a crash would
// leave it. Its retry of the same answer, while the first still runs the
// tool, is refused as waiting for no answer, naming the id: it does not
// claim the run again, so the tool runs once (an at-most-once tool is
// not taken for one a crash cut off either) and the first runtime's
// resume finishes the run. The second, stale once more, then takes the
// finished run.
func TestSession_S4_ARetriedResumeDoesNotTakeARunAnotherWriterResumed(t *testing.T) {
	for _, kind := range []struct {
		name string
		opts []tool.Option
	}{
		{"at-least-once", nil},
		{"at-most-once", []tool.Option{tool.AtMostOnce()}},
	} {
		for _, stores := range twostores.Pairs() {
			t.Run(kind.name+"/"+stores.Name, func(t *testing.T) {
				ctx := context.Background()
				st1, st2 := stores.Open(t)
				started, release := make(chan struct{}), make(chan struct{})
				var released sync.Once
				var runs atomic.Int32
				build := func(st persistence.Store) *agent.Agent {
					sm, err := persistence.NewSessionManager(st, "shared")
					require.NoError(t, err)
					del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
						if runs.Add(1) == 1 {
							close(started)
							select {
							case <-release:
							case <-ctx.Done():
								return "", ctx.Err()
							}
						}
						return "deleted", nil
					}, kind.opts...)
					return newAgent(t, agent.Config{ID: "assistant", Session: sm, System: actorstest.System(t),
						Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "approval")},
						Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}))})
				}
				a1 := build(st1)
				res, err := a1.Invoke(ctx, agent.Text("clean up"))
				require.NoError(t, err)
				require.Equal(t, agent.StopInterrupt, res.StopReason)
				answer := respond(res.Interrupts[0], "y")
				a2 := build(st2) // holds the interrupted run
				status, err := a2.Status(ctx)
				require.NoError(t, err)
				require.Equal(t, agent.ActivityInterrupted, status.State)
				// Before the agents close: a failed check does not leave the tool waiting.
				t.Cleanup(func() { released.Do(func() { close(release) }) })

				type outcome struct {
					res *agent.Result
					err error
				}
				first := make(chan outcome, 1)
				go func() {
					res, err := a1.Invoke(ctx, agent.Resume(answer))
					first <- outcome{res, err}
				}()
				<-started // a1's resume is taken and the tool runs

				_, err = a2.Invoke(ctx, agent.Resume(answer))
				require.ErrorIs(t, err, persistence.ErrConflict, "the run a2 holds is stale")
				_, err = a2.Invoke(ctx, agent.Resume(answer))
				if assert.ErrorIs(t, err, interrupt.ErrNotInterrupted, "the answer was taken by a1's resume") {
					assert.NotErrorIs(t, err, persistence.ErrConflict)
					var ie *interrupt.IDError
					if assert.ErrorAs(t, err, &ie) {
						assert.Equal(t, answer.ID, ie.ID, "the refusal names the id")
					}
				}
				status, err = a2.Status(ctx)
				require.NoError(t, err)
				assert.Equal(t, agent.ActivityIncomplete, status.State, "a1's claim: answered, its tool cycle pending")

				released.Do(func() { close(release) })
				out := <-first
				if assert.NoError(t, out.err, "a1's resume, taken, is not cut off") {
					assert.Equal(t, agent.StopEndTurn, out.res.StopReason)
				}
				assert.Equal(t, int32(1), runs.Load(), "the approved tool ran once")

				// a2 is stale again (a1 finished the run): told so, it
				// takes the finished run and waits for nothing.
				_, err = a2.Invoke(ctx, agent.Resume(answer))
				require.ErrorIs(t, err, persistence.ErrConflict)
				status, err = a2.Status(ctx)
				require.NoError(t, err)
				assert.Equal(t, agent.ActivityIdle, status.State)
				assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"},
					describeAll(agenttest.Messages(t, a2)))
				requireValidHistory(t, agenttest.Messages(t, a2))
			})
		}
	}
}
