package graph_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
)

// BenchmarkGraph_Chain100 runs a 100-node chain of trivial agents (b3's
// chain100): one op is one invocation of a freshly built chain; the build
// is not timed.
func BenchmarkGraph_Chain100(b *testing.B) { benchChain(b, 100) }

// BenchmarkGraph_Chain10000 is BenchmarkGraph_Chain100 with 10,000
// nodes: a step of the schedule costs O(1) in a chain, so a node costs
// what it costs in chain100.
func BenchmarkGraph_Chain10000(b *testing.B) { benchChain(b, 10000) }

// benchChain times invocations of freshly built n-node chains.
func benchChain(b *testing.B, n int) {
	ctx := context.Background()
	sys := actorstest.System(b)
	for b.Loop() {
		b.StopTimer()
		g := chain(b, sys, nil, n)
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

// chain builds n0 → n1 → … → n(n-1), each a trivial agent.
func chain(b *testing.B, sys *actors.System, session *persistence.SessionManager, n int) *graph.Graph {
	gb := graph.NewBuilder()
	for i := range n {
		id := "n" + strconv.Itoa(i)
		gb.AddNode(id, agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
			return model.TextTurn("done"), nil
		})}))
		if i > 0 {
			gb.AddEdge("n"+strconv.Itoa(i-1), id)
		}
	}
	g, err := gb.Build(context.Background(), graph.Config{System: sys, Session: session})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkGraph_Chain100SQLite is BenchmarkGraph_Chain100 with a SQLite
// session (no fsync): the saves after every node.
func BenchmarkGraph_Chain100SQLite(b *testing.B) {
	ctx := context.Background()
	sys := actorstest.System(b)
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: b.TempDir(), NoFsync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		m, err := persistence.NewSessionManager(st, "s"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		g := chain(b, sys, m, 100)
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

// BenchmarkGraph_Fanout200 runs root → 200 leaves (b3's fanout200).
func BenchmarkGraph_Fanout200(b *testing.B) {
	ctx := context.Background()
	sys := actorstest.System(b)
	for b.Loop() {
		b.StopTimer()
		gb := graph.NewBuilder().AddNode("root", trivial())
		for i := range 200 {
			id := "leaf" + strconv.Itoa(i)
			gb.AddNode(id, trivial()).AddEdge("root", id)
		}
		g, err := gb.Build(ctx, graph.Config{System: sys})
		if err != nil {
			b.Fatal(err)
		}
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

func trivial() actors.Node {
	return agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
		return model.TextTurn("done"), nil
	})})
}

// BenchmarkGraph_Fanout200Gated gates every even leaf of root → 200
// leaves, then answers the 100 interrupts in one resume (b3's
// fanout200-hitl): one op is both invocations.
func BenchmarkGraph_Fanout200Gated(b *testing.B) {
	ctx := context.Background()
	sys := actorstest.System(b)
	gateEven := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		n, ok := strings.CutPrefix(ev.NodeID, "leaf")
		if i, _ := strconv.Atoi(n); !ok || i%2 != 0 {
			return nil
		}
		_, err := ev.Interrupt("approve", map[string]string{"node": ev.NodeID})
		return err
	})
	for b.Loop() {
		b.StopTimer()
		gb := graph.NewBuilder().AddNode("root", trivial())
		for i := range 200 {
			id := "leaf" + strconv.Itoa(i)
			gb.AddNode(id, trivial()).AddEdge("root", id)
		}
		g, err := gb.Build(ctx, graph.Config{System: sys, Hooks: []hook.Provider{gateEven}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := g.Invoke(ctx, agent.Text("go"))
		if err != nil || len(res.Interrupts) != 100 {
			b.Fatal(err, res.Status)
		}
		rs := make([]interrupt.Response, len(res.Interrupts))
		for i, in := range res.Interrupts {
			rs[i] = interrupt.Respond(in.ID, "y")
		}
		res, err = g.Invoke(ctx, agent.Resume(rs...))
		if err != nil || res.Status != multiagent.StatusCompleted {
			b.Fatal(err, res.Status)
		}
		b.StopTimer()
		_ = g.Close(ctx)
		b.StartTimer()
	}
}
