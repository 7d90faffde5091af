package actors_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/proto/braidv1"
)

// twoNodes is a stateful policy that starts nodes "a" and "b" together;
// encoding its state panics once armed (a fault in the orchestrator's own
// Receive, which saves it), and only once.
type twoNodes struct{ armed atomic.Bool }

func (p *twoNodes) Begin(v *actors.RunView) ([]actors.NodeStart, error) {
	return []actors.NodeStart{{Node: "a", Input: v.Task()}, {Node: "b", Input: v.Task()}}, nil
}
func (p *twoNodes) Next(*actors.RunView, string) ([]actors.NodeStart, string) { return nil, "" }
func (p *twoNodes) MarshalPolicy() (json.RawMessage, error) {
	if p.armed.CompareAndSwap(true, false) {
		panic("boom in MarshalPolicy")
	}
	return json.RawMessage(`{}`), nil
}
func (p *twoNodes) UnmarshalPolicy(json.RawMessage) error { return nil }
func (p *twoNodes) ResetPolicy()                          {}

// SPEC R4, R6: when an orchestrator's actor faults while a node runs, the
// node's run is cut off, and the orchestrator is not activated again until
// that run has returned: the next activation carries the run on and runs
// the cut-off node again, never beside its cut-off run (a node that does
// not watch its context included).
func TestOrchestratorFault_R4_NextActivationWaitsForTheCutOffNodeRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := actors.NewSystem(actors.DefaultConfig())
		require.NoError(t, err)
		defer func() {
			assert.NoError(t, sys.Close(context.Background()))
			time.Sleep(time.Minute) // Proto.Actor's dead-letter throttle waits on a ticker of its own
		}()
		sm, err := persistence.NewSessionManager(memory.New(), "s1")
		require.NoError(t, err)
		pol := &twoNodes{}
		bStarted, finish := make(chan struct{}, 1), make(chan struct{})
		var running, most, aRuns, bRuns atomic.Int32
		a := agentnode.Func(func(ctx context.Context, _ agent.Input) ([]model.ContentBlock, error) {
			if aRuns.Add(1) == 1 {
				<-bStarted
				pol.armed.Store(true) // the save of this report faults
			}
			return []model.ContentBlock{model.Text("a")}, nil
		})
		b := agentnode.Func(func(ctx context.Context, _ agent.Input) ([]model.ContentBlock, error) {
			n := running.Add(1)
			defer running.Add(-1)
			if n > most.Load() {
				most.Store(n)
			}
			if bRuns.Add(1) == 1 {
				bStarted <- struct{}{}
				<-ctx.Done() // cut off by the fault
				<-finish     // and finishes its work all the same
			}
			return []model.ContentBlock{model.Text("b")}, nil
		})
		o, err := actors.NewOrchestrator(context.Background(), sys, actors.OrchestratorConfig{Kind: "test", ID: "o", Session: sm,
			Nodes: []actors.NodeSpec{{ID: "a", Node: a}, {ID: "b", Node: b}}, Policy: pol})
		require.NoError(t, err)
		task, err := agent.InputToWire(agent.Text("go"))
		require.NoError(t, err)
		_, err = o.Invoke(context.Background(), task)
		require.Error(t, err, "the actor faulted")
		assert.Contains(t, err.Error(), "boom in MarshalPolicy")

		invoked := make(chan *braidv1.MultiAgentResult, 1)
		go func() {
			res, err := o.Invoke(context.Background(), &braidv1.AgentInput{})
			assert.NoError(t, err)
			invoked <- res
		}()
		synctest.Wait() // everything that can run has run: b's cut-off run waits for finish
		select {
		case res := <-invoked:
			t.Errorf("the run was carried on (%v) while node b's cut-off run still ran", res.GetStatus())
			invoked <- res
		default:
		}
		assert.EqualValues(t, 1, bRuns.Load(), "b is not run again while its cut-off run runs")

		close(finish)
		res := <-invoked
		assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus(), "the next activation carried the run on")
		assert.EqualValues(t, 2, bRuns.Load(), "the cut-off node ran again, once")
		assert.EqualValues(t, 1, most.Load(), "never two runs of b at once")
		assert.NoError(t, o.Close(context.Background()))
	})
}
