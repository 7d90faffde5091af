package agent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// holdFirst is an executor that runs a cycle's two calls at once in a set
// order: the first runs until its tool says it is under way (started) or
// it ends, the second runs to its end, then the first is let go (release).
type holdFirst struct {
	started, release chan struct{}
}

func (e holdFirst) Execute(ctx context.Context, tasks []tool.Task) {
	if len(tasks) != 2 { // a pass that runs what is left of the cycle
		tool.Sequential{}.Execute(ctx, tasks)
		return
	}
	var run []bool
	for _, t := range tasks {
		ok, interrupted := t.Prepare(ctx)
		if interrupted {
			return
		}
		run = append(run, ok)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if run[0] {
			tasks[0].Run(ctx)
		}
	}()
	select {
	case <-e.started:
	case <-done: // the first did not run its tool
	}
	if run[1] {
		tasks[1].Run(ctx)
	}
	close(e.release)
	<-done
}

// dupRig: a cycle whose two at-most-once calls, "slow" then "quick", share
// the tool-use id t1 (a model may repeat an id); slow is under way while
// quick runs to its end.
type dupRig struct {
	runs counter
}

func (r *dupRig) agent(t *testing.T, store persistence.Store) *agent.Agent {
	t.Helper()
	ex := holdFirst{started: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	slow := tool.New("slow", "slow", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.runs.inc("slow")
		once.Do(func() { close(ex.started) })
		<-ex.release
		return "slow ok", nil
	}, tool.AtMostOnce())
	quick := tool.New("quick", "quick", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.runs.inc("quick")
		return "quick ok", nil
	}, tool.AtMostOnce())
	m, err := persistence.NewSessionManager(store, crashSession)
	require.NoError(t, err)
	return newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "slow", pathsIn{}), model.Call("t1", "quick", pathsIn{})),
		Tools: []tool.Tool{slow, quick}, Session: m, System: actorstest.System(t), Executor: ex})
}

// SPEC S6: the start mark of an at-most-once call is its own, not its tool
// use id's: two at-most-once calls that share an id and run at once both
// run, once, without a crash and without a recovery question.
func TestAtMostOnce_S6_CallsSharingAToolUseIDRunWithoutARecoveryQuestion(t *testing.T) {
	r := &dupRig{}
	a := r.agent(t, memory.New())
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason, "nothing was cut off (%v)", res.Interrupts)
	assert.Equal(t, 1, r.runs.get("slow"))
	assert.Equal(t, 1, r.runs.get("quick"))
}
