package agent_test

import (
	"context"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// closeCutRig builds agents on one store with agenttest's fetch tool,
// whose first run blocks until its context ends (and signals started),
// and a model that calls fetch, then answers with what it returned.
type closeCutRig struct {
	st      persistence.Store
	runs    atomic.Int32
	started chan struct{}
}

func (r *closeCutRig) agent(t *testing.T, opts ...tool.Option) *agent.Agent {
	t.Helper()
	sm, err := persistence.NewSessionManager(r.st, "s")
	require.NoError(t, err)
	a, err := agent.New(context.Background(), agent.Config{ID: "a", Session: sm, Model: agenttest.FetchOnce(), Tools: []tool.Tool{agenttest.BlockingFetch(&r.runs, r.started, nil, opts...)}, System: actorstest.System(t)})
	require.NoError(t, err)
	return a
}

// closedMidTool invokes an agent, closes it while fetch runs, and returns
// a new agent on the same session (a new process).
func (r *closeCutRig) closedMidTool(t *testing.T, opts ...tool.Option) *agent.Agent {
	t.Helper()
	ctx := context.Background()
	a := r.agent(t, opts...)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Text("go"))
		errc <- err
	}()
	<-r.started
	require.NoError(t, a.Close(ctx))
	require.ErrorIs(t, <-errc, agent.ErrClosed)
	b := r.agent(t, opts...)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b
}

// SPEC S6, A3: an agent closed while a tool runs is cut off as by a
// crash: the tool's context error is not its result and the invocation is
// not taken back, so the run is incomplete and, carried on, runs the tool
// again and answers with what it returned then.
func TestAgent_S6_CloseMidToolLeavesTheRunToCarryOnAndTheToolRunsAgain(t *testing.T) {
	forStores(t, testCloseMidToolLeavesTheRunToCarryOn)
}

func testCloseMidToolLeavesTheRunToCarryOn(t *testing.T, store persistence.Store) {
	ctx := context.Background()
	r := &closeCutRig{st: store, started: make(chan struct{}, 1)}
	b := r.closedMidTool(t)
	st, err := b.Status(ctx)
	require.NoError(t, err)
	require.True(t, st.Incomplete(), "the run is left to carry on: %+v", st)
	res, err := b.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, "saw: fetched", res.Message.Text())
	assert.Equal(t, int32(2), r.runs.Load())
}

// SPEC S6: an at-most-once tool cut off by the agent's Close is not run
// again unasked: carried on, the agent stops with braid.recovery.
func TestAgent_S6_AnAtMostOnceToolCutOffByCloseAsksBeforeRunningAgain(t *testing.T) {
	forStores(t, testAtMostOnceToolCutOffByCloseAsks)
}

func testAtMostOnceToolCutOffByCloseAsks(t *testing.T, store persistence.Store) {
	ctx := context.Background()
	r := &closeCutRig{st: store, started: make(chan struct{}, 1)}
	b := r.closedMidTool(t, tool.AtMostOnce())
	res, err := b.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, agent.RecoveryInterrupt, res.Interrupts[0].Name)
	assert.Equal(t, int32(1), r.runs.Load(), "not run again unasked")
}

// SPEC A3: a Close during the first model call, before anything but the
// prompt was saved, still takes the prompt back: the history is as before.
func TestAgent_A3_CloseBeforeAnythingButThePromptTakesThePromptBack(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	calling := make(chan struct{})
	m := hangingModel{calling: calling}
	sm, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	a, err := agent.New(ctx, agent.Config{ID: "a", Session: sm, Model: m, System: actorstest.System(t)})
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Text("go"))
		errc <- err
	}()
	<-calling
	require.NoError(t, a.Close(ctx))
	require.ErrorIs(t, <-errc, agent.ErrClosed)
	sm2, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	b, err := agent.New(ctx, agent.Config{ID: "a", Session: sm2, Model: model.Scripted(model.TextTurn("hi")), System: actorstest.System(t)})
	require.NoError(t, err)
	defer b.Close(ctx)
	status, err := b.Status(ctx)
	require.NoError(t, err)
	assert.Zero(t, status.Messages)
	assert.False(t, status.Incomplete())
}

// hangingModel signals calling when called and streams nothing until its
// context ends.
type hangingModel struct{ calling chan struct{} }

func (m hangingModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
		close(m.calling)
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// forStores runs test on a memory store and on a SQLite store.
func forStores(t *testing.T, test func(*testing.T, persistence.Store)) {
	t.Run("memory", func(t *testing.T) { test(t, memory.New()) })
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir(), NoFsync: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		test(t, st)
	})
}

// SPEC R2, S6: the cut-off has a protobuf form: an AgentCancel with reason
// CUT_OFF (what a node run in another process sends when its orchestrator
// closes) cuts the invocation off as a Close does, so the run is left to
// carry on and its tool runs again.
func TestAgentActor_S6_ACancelWithReasonCutOffLeavesTheRunToCarryOn(t *testing.T) {
	ctx := context.Background()
	r := &closeCutRig{st: memory.New(), started: make(chan struct{}, 1)}
	a := r.agent(t)
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	d := newDriver(t, actorstest.System(t))
	in, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	d.send(t, a, &braidv1.AgentInvoke{Input: in, InvocationId: "i1"})
	<-r.started
	d.send(t, a, &braidv1.AgentCancel{Reason: braidv1.CancelReason_CANCEL_REASON_CUT_OFF, InvocationId: "i1"})
	c, ok := d.next(t).(*braidv1.AgentCancelled)
	require.True(t, ok)
	assert.True(t, c.GetWasRunning())
	_, isErr := d.next(t).(*braidv1.Error)
	require.True(t, isErr, "the invocation ends with an error")

	st, err := a.Status(ctx)
	require.NoError(t, err)
	require.True(t, st.Incomplete(), "left to carry on: %+v", st)
	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, "saw: fetched", res.Message.Text())
	assert.Equal(t, int32(2), r.runs.Load())
}
