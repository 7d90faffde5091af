package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/actors"
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

// b3: Graph wall times, the scenarios of the peer's bench/b3_graph.mjs:
// every node is a trivial agent whose scripted model answers one text.
//
//	chain100        n0 -> n1 -> ... -> n99
//	fanout200       root -> 200 leaves
//	fanout200-hitl  root -> 200 leaves, BeforeNodeCall gates every even
//	                leaf (100 interrupts), then one resume answers all 100
//
// and the same fan-outs with 10,000 leaves (5,000 gated), and a chain of
// 10,000 nodes (a step of the schedule costs O(1)). Build time (the
// graph and its agents) is reported apart from invoke time, as the peer
// does; each figure is the median of reps runs on a fresh graph after two
// warm-ups.

type b3Case struct {
	label  string
	leaves int  // fan-out leaves; 0: chain
	chain  int  // chain length
	gated  bool // gate every even leaf, then resume them in one call
	reps   int
}

type b3Figures struct {
	label              string
	build, invoke      time.Duration // medians
	interrupt, resume  time.Duration // hitl phases (medians)
	nodes              int
	heapPerNode        float64 // bytes, after the run, graph live
	interrupts, status string
}

func runB3(ctx context.Context, w io.Writer, peer peerResults, reps int) error {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	if err != nil {
		return err
	}
	defer sys.Close(context.WithoutCancel(ctx))
	cases := []b3Case{
		{label: "chain100", chain: 100, reps: reps},
		{label: "fanout200", leaves: 200, reps: reps},
		{label: "fanout200-hitl", leaves: 200, gated: true, reps: reps},
		{label: "fanout10000", leaves: 10000, reps: 3},
		{label: "fanout10000-hitl", leaves: 10000, gated: true, reps: 3},
		{label: "chain10000", chain: 10000, reps: 3},
	}
	fmt.Fprintf(w, "\nb3 graph (median ms of %d runs, fresh graph each; build apart; peer: Strands TS, same scenarios)\n", reps)
	fmt.Fprintf(w, "%-18s %10s %10s %10s %10s %8s %12s\n", "scenario", "build", "invoke", "peer", "ratio", "nodes", "heap/node")
	var all []b3Figures
	for _, c := range cases {
		f, err := b3Run(ctx, sys, c, nil)
		if err != nil {
			return fmt.Errorf("b3 %s: %w", c.label, err)
		}
		all = append(all, f)
		p := peer.b3Invoke[c.label]
		ratio := "-"
		peerCol := "-"
		if p > 0 {
			peerCol = fmt.Sprintf("%.2f", p)
			ratio = fmt.Sprintf("%.1fx", p/ms(f.invoke))
		}
		fmt.Fprintf(w, "%-18s %10.2f %10.2f %10s %10s %8d %10.2f KiB\n", c.label, ms(f.build), ms(f.invoke), peerCol, ratio, f.nodes, f.heapPerNode/1024)
		if c.gated {
			fmt.Fprintf(w, "%-18s   interrupt phase %.2f ms (%s), resume phase %.2f ms (%s)\n", "", ms(f.interrupt), f.interrupts, ms(f.resume), f.status)
		}
	}
	return b3Where(ctx, w, sys, all[0])
}

// b3Where says where a chain node's time goes: an agent invocation alone
// (the same trivial agent, called directly), and the orchestration (node
// actor hops, scheduling, result conversion), and what saving after every
// node costs (the same chain with a SQLite session, no fsync).
func b3Where(ctx context.Context, w io.Writer, sys *actors.System, chain b3Figures) error {
	a, err := agent.New(ctx, agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn("done"), nil }), System: sys})
	if err != nil {
		return err
	}
	defer a.Close(context.WithoutCancel(ctx))
	const n = 2000
	start := time.Now()
	for range n {
		if err := a.SetMessages(ctx, nil); err != nil {
			return err
		}
		if _, err := a.Invoke(ctx, agent.Text("go")); err != nil {
			return err
		}
	}
	perAgent := time.Since(start) / n
	dir, err := os.MkdirTemp("", "braid-b3-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir, NoFsync: true})
	if err != nil {
		return err
	}
	defer st.Close()
	saved, err := b3Run(ctx, sys, b3Case{label: "chain100+sqlite", chain: 100, reps: 5}, st)
	if err != nil {
		return err
	}
	perNode := chain.invoke / 100
	fmt.Fprintf(w, "where a chain node's time goes: %.1f µs per node; a bare agent invocation (reset + invoke) %.1f µs;\n",
		us(perNode), us(perAgent))
	fmt.Fprintf(w, "  orchestration (node actor hop, scheduling, input/result conversion) %.1f µs; with a SQLite session (no fsync) %.1f µs per node (+%.1f µs of saves)\n",
		us(perNode-perAgent), us(saved.invoke/100), us(saved.invoke/100-perNode))
	return nil
}

func b3Run(ctx context.Context, sys *actors.System, c b3Case, st persistence.Store) (b3Figures, error) {
	f := b3Figures{label: c.label}
	var builds, invokes, interrupts, resumes []time.Duration
	for i := range c.reps + 2 {
		var before runtime.MemStats
		last := i == c.reps+1
		if last {
			runtime.GC()
			runtime.ReadMemStats(&before)
		}
		t0 := time.Now()
		b, nodes := b3Builder(c)
		cfg := graph.Config{ID: "b3", System: sys, MaxNodeExecutions: 1 << 20}
		if st != nil {
			m, err := persistence.NewSessionManager(st, fmt.Sprintf("%s-%d", c.label, i))
			if err != nil {
				return f, err
			}
			cfg.Session = m
		}
		if c.gated {
			cfg.Hooks = []hook.Provider{b3Gate()}
		}
		g, err := b.Build(ctx, cfg)
		if err != nil {
			return f, err
		}
		built := time.Since(t0)
		t1 := time.Now()
		res, err := g.Invoke(ctx, agent.Text("go"))
		if err != nil {
			return f, err
		}
		var ti, tr time.Duration
		if c.gated {
			ti = time.Since(t1)
			if res.Status != multiagent.StatusInterrupted || len(res.Interrupts) != c.leaves/2 {
				return f, fmt.Errorf("want %d interrupts, got %s with %d", c.leaves/2, res.Status, len(res.Interrupts))
			}
			f.interrupts = fmt.Sprintf("%d interrupts, %d completed", len(res.Interrupts), count(res, multiagent.StatusCompleted))
			rs := make([]interrupt.Response, len(res.Interrupts))
			for j, in := range res.Interrupts {
				rs[j] = interrupt.Respond(in.ID, "y")
			}
			t2 := time.Now()
			res, err = g.Invoke(ctx, agent.Resume(rs...))
			if err != nil {
				return f, err
			}
			tr = time.Since(t2)
		}
		took := time.Since(t1)
		if res.Status != multiagent.StatusCompleted || len(res.Results) != nodes {
			return f, fmt.Errorf("want %d completed nodes, got %s with %d results", nodes, res.Status, len(res.Results))
		}
		f.status = fmt.Sprintf("%s, %d results", res.Status, len(res.Results))
		if last {
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			f.heapPerNode = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(nodes)
			runtime.KeepAlive(g)
		}
		if err := g.Close(ctx); err != nil {
			return f, err
		}
		f.nodes = nodes
		if i >= 2 {
			builds, invokes, interrupts, resumes = append(builds, built), append(invokes, took), append(interrupts, ti), append(resumes, tr)
		}
	}
	f.build, f.invoke, f.interrupt, f.resume = median(builds), median(invokes), median(interrupts), median(resumes)
	return f, nil
}

func b3Builder(c b3Case) (*graph.Builder, int) {
	b := graph.NewBuilder()
	if c.chain > 0 {
		for i := range c.chain {
			id := "n" + strconv.Itoa(i)
			b.AddNode(id, b3Agent(id))
			if i > 0 {
				b.AddEdge("n"+strconv.Itoa(i-1), id)
			}
		}
		return b, c.chain
	}
	b.AddNode("root", b3Agent("root"))
	for i := range c.leaves {
		id := "leaf" + strconv.Itoa(i)
		b.AddNode(id, b3Agent(id))
		b.AddEdge("root", id)
	}
	return b, c.leaves + 1
}

func b3Agent(id string) actors.Node {
	reply := id + " done"
	return agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn(reply), nil })})
}

// b3Gate interrupts every even leaf; an answer other than "y" cancels it.
func b3Gate() hook.Provider {
	return hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		n, ok := strings.CutPrefix(ev.NodeID, "leaf")
		if !ok {
			return nil
		}
		if i, _ := strconv.Atoi(n); i%2 != 0 {
			return nil
		}
		ans, err := ev.Interrupt("approve", map[string]string{"node": ev.NodeID})
		if err != nil {
			return err
		}
		if s, _ := ans.String(); s != "y" {
			ev.CancelNode("")
		}
		return nil
	})
}

func count(res *multiagent.Result, s multiagent.Status) int {
	n := 0
	for _, r := range res.Results {
		if r.Status == s {
			n++
		}
	}
	return n
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
func us(d time.Duration) float64 { return float64(d) / 1e3 }
