package agent_test

// SPEC S6 and A3 when a model gives two calls of one cycle the same tool-use
// id: after a crash, each finished result and each start mark goes back to
// its own call, not to the first call of its id.

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// dupCrashRig: a cycle of "slow" then "quick", both with tool-use id t1.
// In the first process slow is under way while quick runs to its end and
// its result is saved; then slow copies the store (what a process killed
// at that moment leaves) and returns. The second process carries the cycle
// on from the copy.
type dupCrashRig struct {
	runs  counter
	mu    sync.Mutex
	crash *export.Session
}

func (r *dupCrashRig) agent(t *testing.T, store persistence.Store, opts ...tool.Option) *agent.Agent {
	t.Helper()
	ex := holdFirst{started: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	slow := tool.New("slow", "slow", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.runs.inc("slow")
		if r.runs.get("slow") == 1 { // the first process: under way while quick runs
			once.Do(func() { close(ex.started) })
			<-ex.release
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.crash == nil {
			exp, err := export.Read(ctx, store, crashSession)
			if err != nil {
				return "", err
			}
			r.crash = exp
		}
		return "slow ok", nil
	}, opts...)
	quick := tool.New("quick", "quick", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.runs.inc("quick")
		return "quick ok", nil
	}, opts...)
	m, err := persistence.NewSessionManager(store, crashSession)
	require.NoError(t, err)
	return newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "slow", pathsIn{}), model.Call("t1", "quick", pathsIn{})),
		Tools: []tool.Tool{slow, quick}, Session: m, System: actorstest.System(t), Executor: ex})
}

// afterCrash runs the first process and returns a fresh store holding what
// its crash left.
func (r *dupCrashRig) afterCrash(t *testing.T, opts ...tool.Option) persistence.Store {
	t.Helper()
	ctx := context.Background()
	res, err := r.agent(t, memory.New(), opts...).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	return restoreCrash(t, r.crash)
}

// SPEC S6, A3: carried on after a crash, a cycle whose calls share a
// tool-use id runs again only the call that had no result (slow), and the
// call that finished (quick) keeps its result and is not run again.
func TestCrash_S6_CallsSharingAToolUseIDKeepTheirOwnResults(t *testing.T) {
	ctx := context.Background()
	r := &dupCrashRig{}
	st := r.afterCrash(t)
	a := r.agent(t, st)
	require.True(t, agenttest.Incomplete(t, a), "the crash cut the cycle off")

	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, r.runs.get("slow"), "the call cut off runs again (at least once)")
	assert.Equal(t, 1, r.runs.get("quick"), "the finished call is not run again")
	msgs := agenttest.Messages(t, a)
	rs := msgs[len(msgs)-2].ToolResults()
	require.Len(t, rs, 2)
	assert.Equal(t, "slow ok", rs[0].Text(), "each call's result in its own place")
	assert.Equal(t, "quick ok", rs[1].Text())
}

// SPEC S6: of two at-most-once calls sharing a tool-use id, the one a crash
// cut off (slow) is the one the recovery question names; the one that
// finished (quick) is neither asked about nor run again.
func TestAtMostOnce_S6_RecoveryNamesTheCutOffCallOfARepeatedToolUseID(t *testing.T) {
	ctx := context.Background()
	r := &dupCrashRig{}
	st := r.afterCrash(t, tool.AtMostOnce())
	a := r.agent(t, st, tool.AtMostOnce())

	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	var reason agent.RecoveryReason
	require.NoError(t, res.Interrupts[0].DecodeReason(&reason))
	assert.Equal(t, "slow", reason.Tool)
	assert.Equal(t, 1, r.runs.get("quick"))

	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, agent.RecoveryRerun)))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, r.runs.get("slow"))
	assert.Equal(t, 1, r.runs.get("quick"))
	msgs := agenttest.Messages(t, a)
	rs := msgs[len(msgs)-2].ToolResults()
	require.Len(t, rs, 2)
	assert.Equal(t, "slow ok", rs[0].Text())
	assert.Equal(t, "quick ok", rs[1].Text())
}
