package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// quotaError is a user's own typed error, unknown to Braid's codecs.
type quotaError struct{ Left int }

func (e *quotaError) Error() string { return fmt.Sprintf("quota exceeded, %d left", e.Left) }

// errUserDenied is a user's own sentinel, unknown to Braid's codecs.
var errUserDenied = errors.New("denied by policy")

// busyAgentStore fails the saves an agent makes on its own (not those
// committed with its orchestrator's record) with a store error that
// wraps sqlite.ErrBusy.
type busyAgentStore struct{ persistence.Store }

func (s *busyAgentStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	agentOnly := len(changes) > 0
	for _, c := range changes {
		agentOnly = agentOnly && c.Key.Kind == persistence.KindAgent
	}
	if agentOnly {
		return nil, fmt.Errorf("save %s: %w", changes[0].Key.ID, sqlite.ErrBusy)
	}
	return s.Store.Save(ctx, opts, changes...)
}

// failingModelAgent is a node whose agent's model fails with err.
func failingModelAgent(err error) actors.Node {
	return agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
		return model.Turn{}, err
	})})
}

// invokeFailed runs g on a prompt and returns the run's result, which
// must have failed.
func invokeFailed(t *testing.T, g *graph.Graph) *multiagent.Result {
	t.Helper()
	res, err := g.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	return res
}

// SPEC R2, M7: in one process, the error of a FAILED agent node is the
// error the agent failed with: a model's error of the user's own type is
// found with errors.As (its fields intact), a user's sentinel with
// errors.Is; the message is the one the wire form carries.
func TestGraph_AgentNodeErrorKeepsTheUsersErrorValue(t *testing.T) {
	qe := &quotaError{Left: 3}
	b := graph.NewBuilder().
		AddNode("typed", failingModelAgent(fmt.Errorf("upstream: %w", qe))).
		AddNode("sentinel", failingModelAgent(fmt.Errorf("upstream: %w", errUserDenied)))
	res := invokeFailed(t, build(t, b, graph.Config{ID: "g"}))

	typed := res.Node("typed").Err
	require.Error(t, typed)
	var got *quotaError
	require.ErrorAs(t, typed, &got)
	assert.Same(t, qe, got)
	assert.Contains(t, typed.Error(), "upstream: quota exceeded, 3 left")
	assert.NotErrorIs(t, typed, actors.ErrRemote, "no process was crossed")

	assert.ErrorIs(t, res.Node("sentinel").Err, errUserDenied)
}

// SPEC R2, S2: a node's agent whose session store fails with
// sqlite.ErrBusy fails the node with an error that matches it.
func TestGraph_AgentNodeErrorMatchesItsStoresSentinel(t *testing.T) {
	st := &busyAgentStore{Store: memory.New()}
	b := graph.NewBuilder().AddNode("a", textAgent(newRecorder(), "a"))
	res := invokeFailed(t, build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s")}))
	err := res.Node("a").Err
	require.Error(t, err)
	assert.ErrorIs(t, err, sqlite.ErrBusy)
	assert.Contains(t, err.Error(), sqlite.ErrBusy.Error())
}

// SPEC A1, R2: a hook of a node's agent that fails the invocation with
// the user's typed error fails the node with an error errors.As finds.
func TestGraph_AgentHookErrorReachesTheGraphsCaller(t *testing.T) {
	qe := &quotaError{Left: 0}
	tl := tool.New("lookup", "test tool", func(context.Context, *tool.Context, struct{}) (string, error) { return "ok", nil })
	m := model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
		return model.ToolTurn(model.Call("t1", "lookup", map[string]any{})), nil
	})
	cfg := agent.Config{Model: m, Tools: []tool.Tool{tl}, Hooks: []hook.Provider{
		hook.Func(func(context.Context, *agent.BeforeToolCallEvent) error { return qe }),
	}}
	b := graph.NewBuilder().AddNode("a", agentnode.Agent(cfg))
	res := invokeFailed(t, build(t, b, graph.Config{ID: "g"}))
	var got *quotaError
	require.ErrorAs(t, res.Node("a").Err, &got)
	assert.Same(t, qe, got)
}

// SPEC M3, R2: a BeforeNodeCall hook that fails a node with the user's
// sentinel fails it with an error that matches that sentinel.
func TestGraph_NodeHookErrorReachesTheGraphsCaller(t *testing.T) {
	b := graph.NewBuilder().AddNode("a", textAgent(newRecorder(), "a"))
	g := build(t, b, graph.Config{ID: "g", Hooks: []hook.Provider{
		hook.Func(func(context.Context, *multiagent.BeforeNodeCallEvent) error { return errUserDenied }),
	}})
	res := invokeFailed(t, g)
	err := res.Node("a").Err
	assert.ErrorIs(t, err, errUserDenied)
	assert.Equal(t, `BeforeNodeCall hook of node "a": denied by policy`, err.Error())
}

// SPEC M1, R2: a function node that fails with the error of a build it
// made (graph.ErrBuild, agentnode.ErrConfig) fails with an error that
// matches it.
func TestGraph_FuncNodeErrorKeepsBraidsOwnSentinels(t *testing.T) {
	buildErr := func(ctx context.Context, _ agent.Input) ([]model.ContentBlock, error) {
		_, err := graph.NewBuilder().Build(ctx, graph.Config{ID: "empty"})
		return nil, err
	}
	cfgErr := func(ctx context.Context, _ agent.Input) ([]model.ContentBlock, error) {
		return nil, fmt.Errorf("inner: %w", agentnode.ErrConfig)
	}
	b := graph.NewBuilder().AddNode("build", agentnode.Func(buildErr)).AddNode("config", agentnode.Func(cfgErr))
	res := invokeFailed(t, build(t, b, graph.Config{ID: "g"}))
	assert.ErrorIs(t, res.Node("build").Err, graph.ErrBuild)
	assert.ErrorIs(t, res.Node("config").Err, agentnode.ErrConfig)
}

// SPEC M11, R2: a nested graph whose node fails gives its parent's
// caller an error that matches ErrNodeFailed and the inner node's own
// error value, at the nested node and at the inner node's result.
func TestGraph_NestedNodeErrorReachesTheOuterCaller(t *testing.T) {
	qe := &quotaError{Left: 1}
	inner := graph.NewBuilder().AddNode("a", failingModelAgent(qe))
	b := graph.NewBuilder().AddNode("inner", inner.AsNode(graph.Config{}))
	res := invokeFailed(t, build(t, b, graph.Config{ID: "g"}))
	n := res.Node("inner")
	require.NotNil(t, n)
	assert.ErrorIs(t, n.Err, actors.ErrNodeFailed)
	var got *quotaError
	require.ErrorAs(t, n.Err, &got)
	assert.Same(t, qe, got)
	require.NotNil(t, n.Multi)
	require.ErrorAs(t, n.Multi.Node("a").Err, &got)
	assert.Same(t, qe, got)
}

// SPEC R2, C1: what crosses a process is the wire form: decoded, a
// node's error keeps its message and the codes the codec knows, and
// matches ErrRemote, not the user's value.
func TestGraph_NodeErrorOnTheWireKeepsMessageAndKnownCodes(t *testing.T) {
	b := graph.NewBuilder().AddNode("a", failingModelAgent(fmt.Errorf("%w: %w", model.ErrRateLimited, errUserDenied)))
	g := build(t, b, graph.Config{ID: "g"})
	w, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	rep, err := g.Binding().Ask(context.Background(), &braidv1.MultiAgentInvoke{Input: w})
	require.NoError(t, err)
	wr, ok := rep.(*braidv1.MultiAgentResult)
	require.True(t, ok, "%T", rep)
	res, err := multiagent.ResultFromWire(wr)
	require.NoError(t, err)
	nerr := res.Node("a").Err
	assert.ErrorIs(t, nerr, model.ErrRateLimited)
	assert.ErrorIs(t, nerr, actors.ErrRemote)
	assert.NotErrorIs(t, nerr, errUserDenied)
	assert.Contains(t, nerr.Error(), "denied by policy")
}

// SPEC M12, R2: a streamed run's final result keeps a FAILED node's Go
// error, as an invoked run's does.
func TestGraph_StreamedResultKeepsTheNodesErrorValue(t *testing.T) {
	b := graph.NewBuilder().AddNode("a", failingModelAgent(fmt.Errorf("upstream: %w", errUserDenied)))
	g := build(t, b, graph.Config{ID: "g"})
	var final *multiagent.Result
	for ev, err := range g.Stream(context.Background(), agent.Text("go")) {
		require.NoError(t, err)
		if r, ok := ev.(*multiagent.ResultEvent); ok {
			final = r.Result
		}
	}
	require.NotNil(t, final)
	require.Equal(t, multiagent.StatusFailed, final.Status)
	assert.ErrorIs(t, final.Node("a").Err, errUserDenied)
}
