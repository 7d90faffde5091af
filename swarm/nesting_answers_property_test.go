package swarm_test

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// nestSeeds random trees are run by
// TestNesting_AnswersReachTheirOwnerAtAnyDepthAcrossRestarts.
// A failing seed runs alone with -run 'TestNesting_AnswersReachTheirOwnerAtAnyDepthAcrossRestarts/<seed>'.
const nestSeeds = 100

// Kinds of owner in a random nesting.
const (
	kindAgent = iota
	kindGraph
	kindSwarm
)

// nestOwner is one owner of a random nesting: an agent (whose hooks may
// interrupt before its model call, its tool batch and its tool "work",
// whose tool "work" may interrupt itself, and which may call a sub agent
// through agent.AsTool), or a Graph or Swarm of children, some of them
// gated by BeforeNodeCall. Every raiser gives its own name as the
// reason (nestReason) and is answered nestAnswer of it.
type nestOwner struct {
	kind int
	id   string
	// agent
	hookAsk, toolAsk bool
	toolsAsk         bool       // a BeforeTools hook interrupts
	modelAsk         bool       // a BeforeModelCall hook interrupts before each prompt's first model call
	cycles           int        // tool cycles before the answer (1 or 2)
	sub              *nestOwner // called as tool "consult"
	twice            bool       // the sub agent is called twice in each turn
	// graph, swarm
	children []*nestOwner
	gated    []bool
	denied   []bool // a gated child the gate cancels once answered (SPEC M3)
	chain    bool   // graph: children in a chain (else all entry points)
}

type nestGen struct {
	rng *rand.Rand
	n   int
}

func (g *nestGen) name(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

// agent is an agent owner whose sub agents go at most depth-1 further.
func (g *nestGen) agent(depth int) *nestOwner {
	o := &nestOwner{kind: kindAgent, id: g.name("a"), hookAsk: g.rng.IntN(2) == 0, toolAsk: g.rng.IntN(2) == 0,
		toolsAsk: g.rng.IntN(4) == 0, modelAsk: g.rng.IntN(5) == 0, cycles: 1 + g.rng.IntN(2)*g.rng.IntN(2)}
	if depth > 1 && g.rng.IntN(2) == 0 {
		o.sub = g.agent(depth - 1)
		o.twice = g.rng.IntN(4) == 0
	}
	return o
}

// owner is an owner of any kind, nested at most depth levels.
func (g *nestGen) owner(depth int) *nestOwner {
	k := kindAgent
	if depth > 1 {
		k = g.rng.IntN(3)
	}
	switch k {
	case kindGraph:
		o := &nestOwner{kind: kindGraph, id: g.name("g"), chain: g.rng.IntN(2) == 0}
		for range 1 + g.rng.IntN(2) {
			o.children = append(o.children, g.owner(depth-1))
			o.gated = append(o.gated, g.rng.IntN(3) == 0)
			o.denied = append(o.denied, g.rng.IntN(5) == 0)
		}
		return o
	case kindSwarm:
		o := &nestOwner{kind: kindSwarm, id: g.name("s")}
		for range 1 + g.rng.IntN(2) {
			o.children = append(o.children, g.agent(depth-1))
			o.gated = append(o.gated, g.rng.IntN(3) == 0)
			o.denied = append(o.denied, g.rng.IntN(5) == 0)
		}
		return o
	}
	return g.agent(depth)
}

func (o *nestOwner) String() string {
	var b strings.Builder
	o.describe(&b)
	return b.String()
}

func (o *nestOwner) describe(b *strings.Builder) {
	switch o.kind {
	case kindAgent:
		fmt.Fprintf(b, "%s(hook=%v tool=%v tools=%v model=%v cycles=%d", o.id, o.hookAsk, o.toolAsk, o.toolsAsk, o.modelAsk, o.cycles)
		if o.sub != nil {
			fmt.Fprintf(b, " twice=%v sub=", o.twice)
			o.sub.describe(b)
		}
		b.WriteString(")")
	default:
		kind := "swarm"
		if o.kind == kindGraph {
			kind = "graph"
			if o.chain {
				kind = "chain"
			}
		}
		fmt.Fprintf(b, "%s:%s[", o.id, kind)
		for i, c := range o.children {
			if i > 0 {
				b.WriteString(", ")
			}
			if o.gated[i] {
				b.WriteString("gated ")
				if o.denied[i] {
					b.WriteString("denied ")
				}
			}
			c.describe(b)
		}
		b.WriteString("]")
	}
}

// nestLog records what the owners of a tree did, safe for concurrent use.
type nestLog struct {
	mu     sync.Mutex
	counts map[string]int
	wrong  []string // answers a raiser saw that were not its own
	seen   map[string]bool
}

func newNestLog() *nestLog { return &nestLog{counts: map[string]int{}, seen: map[string]bool{}} }

func (l *nestLog) add(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[key]++
}

// saw records that raiser who was given answer v.
func (l *nestLog) saw(who string, v interrupt.Value) {
	s, _ := v.String()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[who] = true
	if s != nestAnswer(who) {
		l.wrong = append(l.wrong, fmt.Sprintf("%s was given %q", who, s))
	}
}

func (l *nestLog) snapshot() (map[string]int, []string, map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts), slices.Clone(l.wrong), maps.Clone(l.seen)
}

// nestAnswer is the answer the test gives to the interrupt raised by who.
func nestAnswer(who string) string { return "v-" + who }

// nestReason is the reason every raiser of the tree gives: who it is.
type nestReason struct {
	Who string `json:"who"`
}

// nestProcess is one process's build of a tree: its System, its top
// owner and the sub agents that agent.AsTool calls.
type nestProcess struct {
	idle       time.Duration // the lone owners' IdleTimeout (0: none)
	lifecycles *actorstest.Lifecycles
	sys        *actors.System
	top        func(ctx context.Context, in agent.Input, mode nestMode) (*nestOutcome, error)
	closes     []func(ctx context.Context) error
}

// nestMode is how the top owner is invoked.
type nestMode int

const (
	byInvoke    nestMode = iota
	byStream             // read to the end
	byStreamCut          // read up to the first interrupt event only (SPEC I9, M12)
)

// nestOutcome is what one invocation of the top owner returned.
type nestOutcome struct {
	done       bool
	interrupts []interrupt.Interrupt
	events     []string // the ids of a stream's interrupt events
	cut        bool     // the stream was left at its first interrupt event
	summary    string
}

func (p *nestProcess) close(t *testing.T) {
	ctx := context.Background()
	for i := len(p.closes) - 1; i >= 0; i-- {
		require.NoError(t, p.closes[i](ctx))
	}
	require.NoError(t, p.sys.Close(ctx))
}

// agentConfig is the agent of owner o: its model asks, given a prompt,
// for "work" (and "consult" when o has a sub agent, and a handoff to
// next when next is set), and answers with the results once they are in.
func agentConfig(t *testing.T, ctx context.Context, l *nestLog, o *nestOwner, next string, p *nestProcess, mgr *persistence.SessionManager, lone bool) agent.Config {
	t.Helper()
	work := tool.New("work", "does the work", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		call := tc.ToolUse.ToolUseID
		if o.toolAsk {
			who := call + ":tool"
			ans, err := tc.Interrupt("ask-tool", nestReason{Who: who})
			if err != nil {
				l.add("raise:" + who)
				return "", err
			}
			l.saw(who, ans)
		}
		l.add("ran:" + call)
		return "worked " + call, nil
	})
	tools := []tool.Tool{work}
	if o.sub != nil {
		sub, err := agent.New(ctx, agentConfig(t, ctx, l, o.sub, "", p, mgr, true))
		require.NoError(t, err)
		p.closes = append(p.closes, sub.Close)
		tools = append(tools, agent.AsTool(sub, "consult", "asks the sub agent"))
	}
	gateTool := hook.Func(func(ctx context.Context, ev *agent.BeforeToolCallEvent) error {
		if !o.hookAsk || ev.ToolUse.Name != "work" {
			return nil
		}
		who := ev.ToolUse.ToolUseID + ":hook"
		ans, err := ev.Interrupt("ask-hook", nestReason{Who: who})
		if err != nil {
			l.add("raise:" + who)
			return err
		}
		l.saw(who, ans)
		return nil
	})
	gateTools := hook.Func(func(ctx context.Context, ev *agent.BeforeToolsEvent) error {
		if !o.toolsAsk {
			return nil
		}
		// the cycle's name is new in each cycle: an equal id in a later
		// cycle would be a fresh interrupt (SPEC A7)
		cycle := ev.Message.ToolUses()[0].ToolUseID
		who := cycle + ":tools"
		ans, err := ev.Interrupt("ask-tools-"+cycle, nestReason{Who: who})
		if err != nil {
			l.add("raise:" + who)
			return err
		}
		l.saw(who, ans)
		return nil
	})
	gateModel := hook.Func(func(ctx context.Context, ev *agent.BeforeModelCallEvent) error {
		last, _ := ev.Request.LastMessage()
		if !o.modelAsk || last.Role != model.RoleUser || len(last.ToolResults()) > 0 {
			return nil
		}
		// named by the prompt's place: each prompt's gate is its own
		who := fmt.Sprintf("%s-m%d:model", o.id, len(ev.Request.Messages))
		ans, err := ev.Interrupt("ask-model-"+who, nestReason{Who: who})
		if err != nil {
			l.add("raise:" + who)
			return err
		}
		l.saw(who, ans)
		return nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		// the cycle is told by the tool results of the last message
		last, _ := req.LastMessage()
		cycle := 1
		var texts []string
		for _, tr := range last.ToolResults() {
			texts = append(texts, tr.Text())
			if c, err := strconv.Atoi(tr.ToolUseID[strings.LastIndex(tr.ToolUseID, "-")+1:]); err == nil {
				cycle = c + 1
			}
		}
		// a sub agent is called once per cycle of its caller: its
		// prompts tell the calls apart
		prompts := 0
		for _, msg := range req.Messages {
			if msg.Role == model.RoleUser && len(msg.ToolResults()) == 0 {
				prompts++
			}
		}
		if len(texts) > 0 && cycle > o.cycles {
			l.add(fmt.Sprintf("answer:%s-p%d", o.id, prompts))
			return model.TextTurn(o.id + " done: " + strings.Join(texts, "; ")), nil
		}
		tag := fmt.Sprintf("%s-p%d-%d", o.id, prompts, cycle)
		l.add("ask:" + tag)
		calls := []model.ToolCall{model.Call("w-"+tag, "work", map[string]any{})}
		if o.sub != nil {
			calls = append(calls, model.Call("c-"+tag, "consult", agent.ToolInput{Prompt: "help " + tag}))
			if o.twice {
				calls = append(calls, model.Call("d-"+tag, "consult", agent.ToolInput{Prompt: "help again " + tag}))
			}
		}
		if next != "" && cycle == o.cycles {
			calls = append(calls, model.Call("h-"+tag, swarm.HandoffTool, map[string]any{"agent_name": next, "message": "over to " + next}))
		}
		return model.ToolTurn(calls...), nil
	})
	cfg := agent.Config{ID: o.id, Model: m, Tools: tools, Hooks: []hook.Provider{gateModel, gateTools, gateTool}}
	if lone {
		// a lone agent (the top, or a sub agent): it lives in the
		// process's System and keeps its own record of the session
		cfg.System, cfg.Session, cfg.IdleTimeout = p.sys, mgr, p.idle
	}
	return cfg
}

// nodeGates interrupts BeforeNodeCall of the gated children of o.
func nodeGates(l *nestLog, o *nestOwner) hook.Provider {
	return hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		i := slices.IndexFunc(o.children, func(c *nestOwner) bool { return c.id == ev.NodeID })
		if i < 0 || !o.gated[i] {
			return nil
		}
		who := o.id + ":gate:" + ev.NodeID
		ans, err := ev.Interrupt("gate", nestReason{Who: who})
		if err != nil {
			l.add("raise:" + who)
			return err
		}
		l.saw(who, ans)
		if o.denied[i] {
			ev.CancelNode(who + " denied")
		}
		return nil
	})
}

func graphBuilder(t *testing.T, ctx context.Context, l *nestLog, o *nestOwner, p *nestProcess, mgr *persistence.SessionManager) *graph.Builder {
	b := graph.NewBuilder()
	for i, c := range o.children {
		b.AddNode(c.id, nodeOf(t, ctx, l, c, p, mgr))
		if o.chain && i > 0 {
			b.AddEdge(o.children[i-1].id, c.id)
		}
	}
	return b
}

func swarmBuilder(t *testing.T, ctx context.Context, l *nestLog, o *nestOwner, p *nestProcess, mgr *persistence.SessionManager) *swarm.Builder {
	b := swarm.NewBuilder()
	for i, c := range o.children {
		next := ""
		if i+1 < len(o.children) {
			next = o.children[i+1].id
		}
		b.AddAgent(agentConfig(t, ctx, l, c, next, p, mgr, false))
	}
	return b
}

// nodeOf is owner o as a node of a graph. mgr is the session of the
// sub agents.
func nodeOf(t *testing.T, ctx context.Context, l *nestLog, o *nestOwner, p *nestProcess, mgr *persistence.SessionManager) actors.Node {
	switch o.kind {
	case kindGraph:
		return graphBuilder(t, ctx, l, o, p, mgr).AsNode(graph.Config{Hooks: []hook.Provider{nodeGates(l, o)}})
	case kindSwarm:
		return swarmBuilder(t, ctx, l, o, p, mgr).AsNode(swarm.Config{Hooks: []hook.Provider{nodeGates(l, o)}})
	}
	return agentnode.Agent(agentConfig(t, ctx, l, o, "", p, mgr, false))
}

// buildNest builds tree o as one process would: a fresh System, the
// session on st.
func buildNest(t *testing.T, l *nestLog, o *nestOwner, st persistence.Store, idle time.Duration) *nestProcess {
	t.Helper()
	ctx := context.Background()
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	p := &nestProcess{sys: sys, idle: idle, lifecycles: lc}
	mgr := manager(t, st, "nest")
	switch o.kind {
	case kindAgent:
		a, err := agent.New(ctx, agentConfig(t, ctx, l, o, "", p, mgr, true))
		require.NoError(t, err)
		p.closes = append(p.closes, a.Close)
		p.top = func(ctx context.Context, in agent.Input, mode nestMode) (*nestOutcome, error) {
			var res *agent.Result
			var events []string
			if mode != byInvoke {
				for ev, err := range a.Stream(ctx, in) {
					if err != nil {
						return nil, err
					}
					switch e := ev.(type) {
					case *agent.InterruptEvent:
						if mode == byStreamCut {
							return &nestOutcome{cut: true}, nil
						}
						events = append(events, e.Interrupt.ID)
					case *agent.ResultEvent:
						res = e.Result
					}
				}
			} else {
				var err error
				if res, err = a.Invoke(ctx, in); err != nil {
					return nil, err
				}
			}
			return &nestOutcome{done: res.StopReason != agent.StopInterrupt, interrupts: res.Interrupts, events: events,
				summary: string(res.StopReason) + " " + res.Message.Text()}, nil
		}
	case kindGraph:
		g, err := graphBuilder(t, ctx, l, o, p, mgr).Build(ctx, graph.Config{ID: o.id, Session: mgr, System: sys, IdleTimeout: idle, Hooks: []hook.Provider{nodeGates(l, o)}})
		require.NoError(t, err)
		p.closes = append(p.closes, g.Close)
		p.top = multiTop(g.Invoke, g.Stream)
	case kindSwarm:
		s, err := swarmBuilder(t, ctx, l, o, p, mgr).Build(ctx, swarm.Config{ID: o.id, Session: mgr, System: sys, IdleTimeout: idle, Hooks: []hook.Provider{nodeGates(l, o)}})
		require.NoError(t, err)
		p.closes = append(p.closes, s.Close)
		p.top = multiTop(s.Invoke, s.Stream)
	}
	return p
}

func multiTop(invoke func(context.Context, agent.Input) (*multiagent.Result, error),
	streamFn func(context.Context, agent.Input) iter.Seq2[multiagent.Event, error],
) func(context.Context, agent.Input, nestMode) (*nestOutcome, error) {
	return func(ctx context.Context, in agent.Input, mode nestMode) (*nestOutcome, error) {
		var res *multiagent.Result
		var events []string
		if mode != byInvoke {
			for ev, err := range streamFn(ctx, in) {
				if err != nil {
					return nil, err
				}
				switch e := ev.(type) {
				case *multiagent.InterruptEvent:
					if e.Node == "" {
						return nil, fmt.Errorf("interrupt event %s names no node", e.Interrupt.ID)
					}
					if mode == byStreamCut {
						return &nestOutcome{cut: true}, nil
					}
					events = append(events, e.Interrupt.ID)
				case *multiagent.ResultEvent:
					res = e.Result
				}
			}
		} else {
			var err error
			if res, err = invoke(ctx, in); err != nil {
				return nil, err
			}
		}
		var b strings.Builder
		if err := summarize(&b, res); err != nil {
			return nil, err
		}
		return &nestOutcome{done: res.Status != multiagent.StatusInterrupted, interrupts: res.Interrupts, events: events, summary: b.String()}, nil
	}
}

// summarize writes the run's status and every node's status and text,
// nested runs included, in node id order. A node run more than once (a
// resumed run is one, SPEC M7) is an error: no node of the trees runs
// twice.
func summarize(b *strings.Builder, res *multiagent.Result) error {
	fmt.Fprintf(b, "%s{", res.Status)
	nodes := slices.Clone(res.Results)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeID < nodes[j].NodeID })
	for _, n := range nodes {
		fmt.Fprintf(b, "%s:%s:%d", n.NodeID, n.Status, n.ExecutionCount)
		if n.ExecutionCount > 1 {
			return fmt.Errorf("node %s ran %d times", n.NodeID, n.ExecutionCount)
		}
		if n.Multi != nil {
			if err := summarize(b, n.Multi); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(b, "%q", n.Text())
		}
		b.WriteString(" ")
	}
	b.WriteString("}")
	return nil
}

// nestRound is what one round of a drive saw.
type nestRound struct {
	listed   []string // ids the invocation listed, sorted
	answered []string // ids answered next, sorted
}

// nestRun is the whole of a drive.
type nestRun struct {
	rounds  []nestRound
	who     map[string]string // interrupt id -> its raiser
	summary string
	counts  map[string]int
}

// driveNest runs tree o from a prompt and answers its interrupts in
// random subsets (rng seeded by seed alone, so two drives that list
// the same interrupts answer the same ones) until it ends. restart says
// whether to build the tree again, in a fresh System on st (an SQLite
// store closed and reopened from its folder), before a round. A drive
// with a reference (ref, the drive without restarts) also sends refused
// inputs now and then, and sometimes leaves a stream at its first
// interrupt event: it then answers what the reference answered in that
// round.
func driveNest(t *testing.T, seed uint64, o *nestOwner, open func() persistence.Store, idle time.Duration, ref *nestRun, restart func(round int) bool) nestRun {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	modes := rand.New(rand.NewPCG(seed, 8)) // Stream or Invoke, each round
	noises := rand.New(rand.NewPCG(seed, 9))
	var last []string // the ids the last round listed
	l := newNestLog()
	st := open()
	p := buildNest(t, l, o, st, idle)
	run := nestRun{who: map[string]string{}}
	noise := ref != nil
	answeredEver := map[string]bool{}
	var waiting []string // ids listed and not answered
	in := agent.Text("go")
	for round := 0; ; round++ {
		require.Less(t, round, 200, "the run does not end")
		if noise && round > 0 && noises.IntN(4) == 0 {
			// SPEC I7: an unknown id beside good answers is refused
			// whole, and so is a prompt, at the top of any nesting;
			// nothing changes (the rest of the drive equals one
			// without these)
			bogus := last[noises.IntN(len(last))] + "-nope"
			_, err := p.top(ctx, agent.Resume(append(slices.Clone(in.Responses()), interrupt.Respond(bogus, "x"))...), byInvoke)
			require.ErrorIs(t, err, interrupt.ErrUnknownID, "round %d", round)
			require.ErrorContains(t, err, bogus, "round %d", round)
			_, err = p.top(ctx, agent.Text("again"), byInvoke)
			require.ErrorIs(t, err, interrupt.ErrResumeRequired, "round %d", round)
		}
		mode := nestMode(modes.IntN(3))
		if !noise && mode == byStreamCut {
			mode = byStream
		}
		out, err := p.top(ctx, in, mode)
		require.NoError(t, err, "round %d", round)
		if out.cut {
			// the caller left at the first interrupt event: the state is
			// saved (SPEC I9) and the run goes on to its end (M12); the
			// answers the reference gave in this round finish it
			require.Less(t, round, len(ref.rounds), "round %d: the reference ended sooner", round)
			want := ref.rounds[round]
			picked := 0 // the draws of a round that saw the list
			for range want.listed {
				picked += 1 - rng.IntN(2)
			}
			if picked == 0 {
				rng.IntN(len(want.listed))
			}
			var answers []interrupt.Response
			for _, id := range want.answered {
				answeredEver[id] = true
				answers = append(answers, interrupt.Respond(id, nestAnswer(ref.who[id])))
			}
			waiting = waiting[:0]
			for _, id := range want.listed {
				if !slices.Contains(want.answered, id) {
					waiting = append(waiting, id)
				}
			}
			run.rounds = append(run.rounds, want)
			last = want.listed
			in = agent.Resume(answers...)
			continue
		}
		listed := make([]string, 0, len(out.interrupts))
		who := map[string]string{}
		for _, in := range out.interrupts {
			var r nestReason
			require.NoError(t, in.DecodeReason(&r), "round %d: %s", round, in)
			require.NotEmpty(t, r.Who)
			who[in.ID] = r.Who
			run.who[in.ID] = r.Who
			listed = append(listed, in.ID)
		}
		sort.Strings(listed)
		require.Equal(t, len(listed), len(slices.Compact(slices.Clone(listed))), "round %d: an interrupt is listed twice: %v", round, listed)
		if mode == byStream {
			// SPEC A10, M12: one interrupt event per interrupt listed
			sort.Strings(out.events)
			require.Equal(t, listed, append([]string{}, out.events...), "round %d: the stream's interrupt events", round)
		}
		for _, id := range listed {
			require.False(t, answeredEver[id], "round %d: %s was answered and is listed again", round, id)
		}
		for _, id := range waiting {
			require.Contains(t, listed, id, "round %d: %s was not answered and is no longer listed", round, id)
		}
		if out.done {
			require.Empty(t, listed)
			run.summary = out.summary
			break
		}
		require.NotEmpty(t, listed, "round %d: interrupted with nothing to answer", round)

		// a random non-empty subset, answered by the owner's own answer
		var answers []interrupt.Response
		var answered []string
		for _, id := range listed {
			if rng.IntN(2) == 0 {
				answered = append(answered, id)
			}
		}
		if len(answered) == 0 {
			answered = []string{listed[rng.IntN(len(listed))]}
		}
		waiting = waiting[:0]
		for _, id := range listed {
			if slices.Contains(answered, id) {
				answeredEver[id] = true
				answers = append(answers, interrupt.Respond(id, nestAnswer(who[id])))
			} else {
				waiting = append(waiting, id)
			}
		}
		run.rounds = append(run.rounds, nestRound{listed: listed, answered: answered})
		last = listed
		in = agent.Resume(answers...)
		switch {
		case restart(round):
			p.close(t)
			if _, onDisk := st.(*sqlite.Store); onDisk {
				require.NoError(t, st.(*sqlite.Store).Close())
				st = open()
			}
			p = buildNest(t, l, o, st, idle)
		case idle > 0:
			// the whole tree passivated mid-interrupt; the answers
			// activate it again (SPEC R4)
			p.lifecycles.AwaitNoneLive(t)
		}
	}
	p.close(t)
	counts, wrong, seen := l.snapshot()
	require.Empty(t, wrong, "an answer reached another owner than the one that asked")
	for k, n := range counts {
		switch {
		case strings.HasPrefix(k, "ran:"), strings.HasPrefix(k, "ask:"), strings.HasPrefix(k, "answer:"):
			require.Equal(t, 1, n, "%s: ran %d times (a completed tool or node ran again, or an owner restarted)", k, n)
		case strings.HasPrefix(k, "raise:"):
			require.True(t, seen[strings.TrimPrefix(k, "raise:")], "%s: its answer never reached it", k)
		}
	}
	run.counts = counts
	return run
}

// SPEC M11, M5, M6, I2, I6, I7, I8, A10, M12, S1, M10, R4: random
// nestings (depth 1 to 4) of agents (BeforeModelCall, BeforeTools and
// BeforeToolCall hooks and a tool that interrupt, one or two tool
// cycles, a sub agent called once or twice a turn through agent.AsTool),
// Graphs and Swarms (BeforeNodeCall gates, some of which cancel their
// node once answered), answered in random subsets over several rounds by
// Invoke or Stream (sometimes left at its first interrupt event,
// which must leave a state the answers finish), the whole tree rebuilt in a fresh System (an SQLite
// store closed and reopened from its folder, or the same memory store)
// before some rounds, and passivated between rounds for some seeds; a
// bad id beside good answers, and a prompt, are sent now and then and
// must be refused with nothing changed. Every interrupt is listed (and
// streamed) once per round until it is answered and never after; every
// answer reaches the hook or tool that raised it; no tool, model turn or
// node runs twice; and every round's interrupts and the end are those
// of a drive with the same answers, without restarts or refused inputs.
// (A Swarm's members are agents, so a Graph nests in a Swarm only through
// an agent's tool, which the trees do not build.)
func TestNesting_AnswersReachTheirOwnerAtAnyDepthAcrossRestarts(t *testing.T) {
	for i := range nestSeeds {
		seed := uint64(1000 + i)
		gen := &nestGen{rng: rand.New(rand.NewPCG(seed, 1))}
		o := gen.owner(1 + int(seed%4))
		restarts := rand.New(rand.NewPCG(seed, 2))
		onSQLite := seed%2 == 0
		var idle time.Duration // the tree passivated between rounds (SPEC R4)
		if seed%3 == 1 {
			idle = time.Millisecond
		}
		ok := t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ref := driveNest(t, seed, o, func() persistence.Store { return memory.New() }, 0, nil, func(int) bool { return false })
			dir := t.TempDir()
			open := func() persistence.Store {
				if !onSQLite {
					return memory.New()
				}
				st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
				require.NoError(t, err)
				t.Cleanup(func() { _ = st.Close() })
				return st
			}
			var mem persistence.Store
			if !onSQLite {
				mem = memory.New()
				open = func() persistence.Store { return mem }
			}
			got := driveNest(t, seed, o, open, idle, &ref, func(int) bool { return restarts.IntN(2) == 0 })
			require.Equal(t, ref.rounds, got.rounds, "rounds differ from a drive without restarts")
			require.Equal(t, ref.summary, got.summary, "the end differs from a drive without restarts")
			require.Equal(t, ref.counts, got.counts)
		})
		if !ok {
			t.Logf("seed %d (sqlite=%v idle=%v): %s", seed, onSQLite, idle, o)
		}
	}
}
