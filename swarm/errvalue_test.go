package swarm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
)

// ledgerError is a user's own typed error, unknown to Braid's codecs.
type ledgerError struct{ Account string }

func (e *ledgerError) Error() string { return "ledger locked: " + e.Account }

// SPEC M9, R2: in one process, a swarm whose agent fails gives its
// caller that agent's Go error: a model's error of the user's own type
// is found with errors.As, fields intact, under the same message.
func TestSwarm_AgentErrorKeepsTheUsersErrorValue(t *testing.T) {
	le := &ledgerError{Account: "acme"}
	m := model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.Turn{}, fmt.Errorf("provider: %w", le) })
	s := build(t, swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m}), swarm.Config{ID: "s"})
	res, err := s.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	nerr := res.Node("a").Err
	var got *ledgerError
	require.ErrorAs(t, nerr, &got)
	assert.Same(t, le, got)
	assert.Contains(t, nerr.Error(), "provider: ledger locked: acme")
}

// SPEC M11, R2: a swarm nested in a graph, whose agent fails with the
// user's typed error, gives the graph's caller an error that matches
// ErrNodeFailed and that errors.As finds the user's error in, at the
// nested node and at the swarm's own node.
func TestSwarm_NestedSwarmErrorReachesTheOuterCaller(t *testing.T) {
	ctx := context.Background()
	le := &ledgerError{Account: "acme"}
	m := model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.Turn{}, le })
	team := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m})
	g, err := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{})).
		Build(ctx, graph.Config{ID: "g", System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(ctx) })
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	n := res.Node("team")
	require.NotNil(t, n)
	assert.ErrorIs(t, n.Err, actors.ErrNodeFailed)
	var got *ledgerError
	require.ErrorAs(t, n.Err, &got)
	assert.Same(t, le, got)
	assert.False(t, errors.Is(n.Err, actors.ErrRemote), "no process was crossed")
	assert.Equal(t, `node failed: node "a": model call: ledger locked: acme`, n.Err.Error())
	require.NotNil(t, n.Multi)
	require.ErrorAs(t, n.Multi.Node("a").Err, &got)
}
