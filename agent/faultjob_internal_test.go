package agent

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// panicReply is the reply of a request whose answer panics: answering
// it makes the actor's Receive panic (a fault in the actor itself, not
// in a hook, tool or model, which are contained in the job).
type panicReply struct{}

func (panicReply) emit(Event) bool   { return true }
func (panicReply) streaming() bool   { return false }
func (panicReply) finish(any, error) { panic("boom in Receive") }
func (panicReply) lend(*job) bool    { return false }

// SPEC R4, R6, S4: when an agent's actor faults (its Receive panics)
// while a job runs, the job is cancelled, and the agent is not activated
// again until that job has returned: a tool that finishes after the
// cancellation has its result saved by the old job, and the next
// activation loads it, instead of running beside the old job with a
// state the old job's save makes stale (its first save then failed with
// persistence.ErrConflict). Whether the job ran on the System's pool or
// on the goroutine of a caller that lent it.
func TestFault_R4_NextActivationWaitsForTheFaultedActivationsJob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		canEnd bool // the caller's context can end: the job runs on the pool
	}{
		{"pool", true},
		{"lent", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sys, err := actors.NewSystem(actors.DefaultConfig())
				require.NoError(t, err)
				defer func() {
					assert.NoError(t, sys.Close(context.Background()))
					time.Sleep(time.Minute) // Proto.Actor's dead-letter throttle (see drainBubble)
				}()
				sm, err := persistence.NewSessionManager(memory.New(), "s1")
				require.NoError(t, err)
				started, finish := make(chan struct{}), make(chan struct{})
				runs := 0
				slow := tool.New("slow", "slow", func(ctx context.Context, _ *tool.Context, _ struct{}) (string, error) {
					runs++
					close(started)
					<-ctx.Done() // the actor's stop cancelled the job
					<-finish     // and the tool still finishes its work
					return "finished", nil
				})
				m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
					if last, _ := req.LastMessage(); len(last.ToolResults()) > 0 {
						return model.TextTurn("done"), nil
					}
					return model.ToolTurn(model.Call("t1", "slow", map[string]any{})), nil
				})
				a, err := New(context.Background(), Config{ID: "a", System: sys, Session: sm, Tools: []tool.Tool{slow}, Model: m})
				require.NoError(t, err)

				ctx := context.Background()
				if tc.canEnd {
					var stop context.CancelFunc
					ctx, stop = context.WithCancel(ctx)
					defer stop()
				}
				invoked := make(chan error, 1)
				go func() { _, err := a.Invoke(ctx, Text("go")); invoked <- err }()
				<-started

				// A queued request whose answer panics, then the abandon
				// that answers it: the actor's Receive panics while the
				// job runs.
				bad := &request{kind: reqSetState, tool: "k", input: json.RawMessage(`1`), reply: panicReply{}}
				a.binding.Send(bad)
				a.binding.Send(&localAbandon{req: bad, cause: context.Canceled})
				synctest.Wait() // the faulted actor has stopped

				status := make(chan error, 1)
				go func() { _, err := a.Status(context.Background()); status <- err }()
				synctest.Wait()
				select {
				case err := <-status:
					t.Errorf("the agent was activated again (Status answered %v) while the job of its faulted activation still ran", err)
					status <- err
				default:
				}

				close(finish)
				<-invoked // cut off: its outcome is not what this test is about
				require.NoError(t, <-status)

				res, err := a.Invoke(context.Background(), Input{})
				require.NoError(t, err, "the activation after the fault carries the run on from the stored state")
				assert.Equal(t, "done", res.Message.Text())
				assert.Equal(t, 1, runs, "the tool's result, saved by the cut-off job, is not lost")

				assert.NoError(t, a.Close(context.Background()))
			})
		})
	}
}
