package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC M10, S4: a Cancel cuts a node's run off while its agent's model
// call or tool still runs; the agent goes on and saves after the node's
// run has returned, while the orchestrator commits the agent's parked
// save with its own record. Neither save may be based on the version
// before the other: the cancelled Invoke ends CANCELLED without an
// error, and the graph's next task runs on the agent's stored history.
func TestGraph_ACancelledNodesAgentSavesAfterItsRunWithoutConflict(t *testing.T) {
	for _, during := range []string{"model", "tool"} {
		t.Run(during, func(t *testing.T) {
			for i := range 8 {
				ctx := context.Background()
				entered, release := make(chan struct{}, 1), make(chan struct{})
				hold := func() {
					select {
					case entered <- struct{}{}:
						<-release // ignores its context, as many tools do
					default:
					}
				}
				tl := tool.New("work", "a tool", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
					if during == "tool" {
						hold()
					}
					return "worked", nil
				})
				m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
					last, _ := req.LastMessage()
					if last.Text() == "first" && during == "model" {
						hold()
					}
					if len(last.ToolResults()) > 0 || last.Text() == "second" {
						return model.TextTurn("done"), nil
					}
					return model.ToolTurn(model.Call("t1", "work", map[string]any{})), nil
				})
				sm, err := persistence.NewSessionManager(memory.New(), "cancel-save")
				require.NoError(t, err)
				g, err := graph.NewBuilder().AddNode("a", agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{tl}})).
					Build(ctx, graph.Config{System: actorstest.System(t), Session: sm})
				require.NoError(t, err)
				done := invokeAsync(ctx, g, agent.Text("first"))
				<-entered
				_, err = g.Cancel(ctx)
				require.NoError(t, err)
				close(release)
				o := <-done
				require.NoError(t, o.err, "run %d", i)
				assert.Equal(t, multiagent.StatusCancelled, o.res.Status, "run %d", i)

				res, err := g.Invoke(ctx, agent.Text("second"))
				require.NoError(t, err, "run %d", i)
				require.Equal(t, multiagent.StatusCompleted, res.Status, "run %d", i)
				assert.Equal(t, "done", res.Text())
				require.NoError(t, g.Close(ctx))
			}
		})
	}
}
