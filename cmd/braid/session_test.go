package main

import (
	"bytes"
	"context"
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
	"github.com/braidhq/braid/persistence/sqlite"
)

// `braid session show` prints an orchestrator's record: the run's status,
// each node's, and the interrupts a node waits for.
func TestSession_ShowPrintsAGraphRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	m, err := persistence.NewSessionManager(st, "gs")
	require.NoError(t, err)
	text := func(s string) actors.Node {
		return agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn(s), nil })})
	}
	gateB := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != "b" {
			return nil
		}
		_, err := ev.Interrupt("approval", map[string]string{"node": "b"})
		return err
	})
	g, err := graph.NewBuilder().AddNode("a", text("a done")).AddNode("b", text("b done")).AddEdge("a", "b").
		Build(ctx, graph.Config{ID: "g", Session: m, System: sys, Hooks: []hook.Provider{gateB}})
	require.NoError(t, err)
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.NoError(t, sys.Close(ctx))
	require.NoError(t, st.Close())

	var so, se bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"session", "show", "-dir", dir, "gs"}, nil, &so, &se), se.String())
	out := so.String()
	assert.Contains(t, out, "graph g: INTERRUPTED")
	assert.Contains(t, out, "node a")
	assert.Contains(t, out, "COMPLETED")
	assert.Contains(t, out, "waiting for "+res.Interrupts[0].ID)
	assert.Contains(t, out, `reason={"node":"b"}`)
	assert.Contains(t, out, "agent g:a:a")
}
