package graph_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

// BenchmarkGraph_Chain100 runs a 100-node chain of trivial agents (b3's
// chain100): one op is one invocation of a freshly built chain; the build
// is not timed.
func BenchmarkGraph_Chain100(b *testing.B) {
	ctx := context.Background()
	sys := freshSystem(b)
	for b.Loop() {
		b.StopTimer()
		g := chain100(b, sys)
		b.StartTimer()
		res, err := g.Invoke(ctx, agent.Text("go"))
		if err != nil || res.Status != multiagent.StatusCompleted {
			b.Fatal(err, res.Status)
		}
		b.StopTimer()
		_ = g.Close(ctx)
		b.StartTimer()
	}
}

func chain100(b *testing.B, sys *actors.System) *graph.Graph {
	gb := graph.NewBuilder()
	for i := range 100 {
		id := "n" + strconv.Itoa(i)
		gb.AddNode(id, agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
			return model.TextTurn("done"), nil
		})}))
		if i > 0 {
			gb.AddEdge("n"+strconv.Itoa(i-1), id)
		}
	}
	g, err := gb.Build(context.Background(), graph.Config{System: sys})
	if err != nil {
		b.Fatal(err)
	}
	return g
}
