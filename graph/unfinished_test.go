package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// seenModel keeps the history an agent node's model was sent at every
// call, as "role:text" strings (tool messages as "role:[tool]").
type seenModel struct {
	mu    sync.Mutex
	calls [][]string
}

func (s *seenModel) add(msgs []model.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, history(msgs))
}

func (s *seenModel) last() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return nil
	}
	return s.calls[len(s.calls)-1]
}

func (s *seenModel) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func history(msgs []model.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if len(m.ToolUses()) > 0 || len(m.ToolResults()) > 0 {
			out = append(out, string(m.Role)+":[tool]")
			continue
		}
		out = append(out, string(m.Role)+":"+m.Text())
	}
	return out
}

// storedHistory returns, as history renders them, the stored messages of
// the agent records of session whose key keep accepts, record after
// record.
func storedHistory(t *testing.T, st persistence.Store, session string, keep func(persistence.Key) bool) []string {
	t.Helper()
	recs, err := st.Session(context.Background(), session)
	require.NoError(t, err)
	var h []string
	for _, rec := range recs {
		if rec.Key.Kind != persistence.KindAgent || !keep(rec.Key) {
			continue
		}
		for _, raw := range rec.Messages {
			m, err := model.ParseMessage(raw)
			require.NoError(t, err)
			h = append(h, history([]model.Message{m})...)
		}
	}
	return h
}

// pastTheGate invokes g with prompt, answers the gate of its one node
// "y" and returns the gate's id and the run as it then stands: stopped on
// the one question of the node's agent.
func pastTheGate(t *testing.T, g *graph.Graph, prompt string) (string, *multiagent.Result) {
	t.Helper()
	ctx := context.Background()
	res, err := g.Invoke(ctx, agent.Text(prompt))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1, "the gate asks")
	gateID := res.Interrupts[0].ID
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1, "the agent's tool asks")
	return gateID, res
}

// anyAgent keeps every agent's record (storedHistory).
func anyAgent(persistence.Key) bool { return true }

// askingNode is a node whose agent runs the tool "lookup", which asks
// "which" (and, with sides set, the tool "side" before it in the same
// turn, counted in sides), then answers "done".
func askingNode(seen *seenModel, sides *atomic.Int32) actors.Node {
	lookup := tool.New("lookup", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("which", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return "answer " + s, nil
	})
	tools := []tool.Tool{lookup}
	if sides != nil {
		tools = append(tools, tool.New("side", "a side effect", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
			sides.Add(1)
			return "side ok", nil
		}))
	}
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		seen.add(req.Messages)
		if last, _ := req.LastMessage(); len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		calls := []model.ToolCall{model.Call("t1", "lookup", map[string]any{})}
		if sides != nil {
			calls = append([]model.ToolCall{model.Call("t0", "side", map[string]any{})}, calls...)
		}
		return model.ToolTurn(calls...), nil
	})
	return agentnode.Agent(agent.Config{Model: m, Tools: tools})
}

func answerAll(res *multiagent.Result, v string) agent.Input {
	var rs []interrupt.Response
	for _, in := range res.Interrupts {
		rs = append(rs, interrupt.Respond(in.ID, v))
	}
	return agent.Resume(rs...)
}

// withAndWithoutSession runs test twice: with a session on a new memory
// store, which session adds to a config, and without one (session gives
// the config back as it is).
func withAndWithoutSession(t *testing.T, test func(t *testing.T, session func(graph.Config) graph.Config)) {
	t.Run("session", func(t *testing.T) {
		test(t, func(cfg graph.Config) graph.Config {
			cfg.Session = manager(t, memory.New(), "s")
			return cfg
		})
	})
	t.Run("no session", func(t *testing.T) {
		test(t, func(cfg graph.Config) graph.Config { return cfg })
	})
}

// SPEC M8 (reset on revisit), M3: a node revisited with a reset whose
// revisit is gated by BeforeNodeCall is reset when its gate is answered
// and it runs: its agent starts from its initial history, as an ungated
// revisit does.
func TestGraph_GatedRevisitIsResetWhenItsGatePasses(t *testing.T) {
	withAndWithoutSession(t, func(t *testing.T, session func(graph.Config) graph.Config) {
		ctx := context.Background()
		seen := &seenModel{}
		r := newRecorder()
		var loops atomic.Int32
		loop := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			loops.Add(1)
			return []model.ContentBlock{model.Text("again")}, nil
		})
		talker := agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
			seen.add(req.Messages)
			return model.TextTurn("done"), nil
		})})
		cfg := session(graph.Config{ID: "g", Hooks: []hook.Provider{gate(r, "talk")}})
		g := build(t, graph.NewBuilder().
			AddNode("talk", talker).AddNode("loop", loop).
			AddEdge("talk", "loop").
			AddEdge("loop", "talk", func(*graph.State) bool { return loops.Load() == 1 }).
			SetEntryPoint("talk").ResetOnRevisit(true), cfg)
		res, err := g.Invoke(ctx, agent.Text("first"))
		require.NoError(t, err)
		for range 2 { // the first visit's gate, then the revisit's
			require.Len(t, res.Interrupts, 1)
			res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
			require.NoError(t, err)
		}
		require.Equal(t, multiagent.StatusCompleted, res.Status)
		require.Equal(t, 2, seen.count())
		assert.Len(t, seen.last(), 1, "the revisit starts from the initial history: %q", seen.last())
	})
}

// SPEC A3, M2: a node whose agent is left waiting by two dead runs in a
// row gets back, in the third, the history it had before either: the
// second run's invocation began where the first one's was taken back to,
// so the second one's prompt is taken back too (no two user messages in
// a row). With a session and without.
func TestGraph_NodeLeftWaitingByTwoDeadRunsInARowTakesBothBack(t *testing.T) {
	withAndWithoutSession(t, func(t *testing.T, session func(graph.Config) graph.Config) {
		ctx := context.Background()
		seen := &seenModel{}
		var fail atomic.Bool
		fail.Store(true)
		cfg := session(graph.Config{ID: "g"})
		g := build(t, graph.NewBuilder().AddNode("asks", askingNode(seen, nil)).AddNode("flaky", flakyNode(&fail)), cfg)
		for _, p := range []string{"first", "second"} {
			res, err := g.Invoke(ctx, agent.Text(p))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusFailed, res.Status)
			require.NoError(t, res.Node("asks").Err, p)
		}
		fail.Store(false)
		res, err := g.Invoke(ctx, agent.Text("third"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusInterrupted, res.Status, "%v", res.Node("asks").Err)
		assert.Equal(t, []string{"user:third"}, seen.last(), "both dead runs' prompts are taken back")
		res, err = g.Invoke(ctx, answerAll(res, "y"))
		require.NoError(t, err)
		assert.Equal(t, multiagent.StatusCompleted, res.Status)
	})
}

// SPEC A3, M6: a node whose agent was left waiting by a run whose gate
// was then answered "no", gated again in the next run, gets back the
// history it had before the dead run's prompt once its new gate is
// answered: neither the "no" (which did not run the agent) nor the
// gated launch moves where the dead invocation began.
func TestGraph_GatedNodeTakesBackTheDeadRunsPromptOnceTheGatePasses(t *testing.T) {
	withAndWithoutSession(t, func(t *testing.T, session func(graph.Config) graph.Config) {
		ctx := context.Background()
		seen := &seenModel{}
		r := newRecorder()
		cfg := session(graph.Config{ID: "g", Hooks: []hook.Provider{gate(r, "asks")}})
		g := build(t, graph.NewBuilder().AddNode("asks", askingNode(seen, nil)), cfg)
		gateID, _ := pastTheGate(t, g, "first")
		res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "n")))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCancelled, res.Status)

		res, err = g.Invoke(ctx, agent.Text("second"))
		require.NoError(t, err)
		require.Len(t, res.Interrupts, 1, "the new run's gate")
		res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusInterrupted, res.Status, "%v", res.Node("asks").Err)
		assert.Equal(t, []string{"user:second"}, seen.last(), "the cancelled run's prompt is taken back")
	})
}

// SPEC A3, M6, M8 (reset on revisit): a node revisited with a reset
// whose agent was left waiting when the run ended (its gate answered
// "no") gets back, in the next run, the history the reset gave it (its
// initial one): the dead invocation, which began after the reset, is
// taken back whole, so the next prompt is not the second user message in
// a row.
func TestGraph_DeadInvocationOfAResetRevisitIsTakenBackToTheReset(t *testing.T) {
	withAndWithoutSession(t, func(t *testing.T, session func(graph.Config) graph.Config) {
		ctx := context.Background()
		seen := &seenModel{}
		r := newRecorder()
		var loops atomic.Int32
		loop := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			loops.Add(1)
			return []model.ContentBlock{model.Text("again")}, nil
		})
		cfg := session(graph.Config{ID: "g", Hooks: []hook.Provider{gate(r, "asks")}})
		g := build(t, graph.NewBuilder().
			AddNode("asks", askingNode(seen, nil)).AddNode("loop", loop).
			AddEdge("asks", "loop").
			AddEdge("loop", "asks", func(*graph.State) bool { return loops.Load() == 1 }).
			SetEntryPoint("asks").ResetOnRevisit(true), cfg)
		answer := func(res *multiagent.Result, name, v string) *multiagent.Result {
			t.Helper()
			require.Len(t, res.Interrupts, 1)
			require.Equal(t, name, res.Interrupts[0].Name)
			res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, v)))
			require.NoError(t, err)
			return res
		}
		res, err := g.Invoke(ctx, agent.Text("first"))
		require.NoError(t, err)
		res = answer(res, "approval", "y")
		res = answer(res, "which", "y") // asks completes, loop runs, asks is revisited: its gate
		require.Len(t, res.Interrupts, 1)
		gateID := res.Interrupts[0].ID
		res = answer(res, "approval", "y")
		require.Len(t, seen.last(), 1, "the revisit began from the reset")
		require.Equal(t, "which", res.Interrupts[0].Name)
		res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "n")))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCancelled, res.Status)

		res, err = g.Invoke(ctx, agent.Text("second"))
		require.NoError(t, err)
		res = answer(res, "approval", "y")
		require.Equal(t, multiagent.StatusInterrupted, res.Status, "%v", res.Node("asks").Err)
		h := seen.last()
		require.Len(t, h, 1, "the dead revisit's prompt is taken back: %q", h)
		assert.Contains(t, h[0], "second")
	})
}

// SPEC A3, M2: a node whose agent was left waiting by a run that ended
// FAILED gets back, in the next run, the history it had before that
// run's prompt, not less: without a session too, what the agent did in
// the runs before (here a completed one) stays in its history.
func TestGraph_DroppedInvocationKeepsTheHistoryOfEarlierRunsWithoutASession(t *testing.T) {
	ctx := context.Background()
	seen := &seenModel{}
	var fail atomic.Bool
	g := build(t, graph.NewBuilder().AddNode("asks", askingNode(seen, nil)).AddNode("flaky", flakyNode(&fail)), graph.Config{ID: "g"})

	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	res, err = g.Invoke(ctx, answerAll(res, "y"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)

	fail.Store(true)
	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)

	fail.Store(false)
	res, err = g.Invoke(ctx, agent.Text("third"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "%v", res.Node("asks").Err)
	assert.Equal(t, []string{"user:first", "assistant:[tool]", "user:[tool]", "assistant:done", "user:third"}, seen.last(),
		"the completed first run stays, the dead second run's prompt is taken back")
}

// SPEC A9, I7, S6: a node's agent whose invocation itself ends with a
// refusal of a prompt (an AfterInvocation callback answers its interrupt
// with a prompt instead of a resume: ErrResumeRequired, after the
// invocation ran) fails the node; the node's runner must not take that
// for a refusal that changed nothing and run the prompt again: the tool
// that already ran does not run twice, and the prompt is not given
// twice.
func TestGraph_AgentRefusingItsOwnAutoResumeIsNotRunAgain(t *testing.T) {
	ctx := context.Background()
	var sides atomic.Int32
	seen := &seenModel{}
	lookup := tool.New("lookup", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if _, err := tc.Interrupt("which", nil); err != nil {
			return "", err
		}
		return "ok", nil
	})
	side := tool.New("side", "a side effect", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		sides.Add(1)
		return "side ok", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		seen.add(req.Messages)
		return model.ToolTurn(model.Call("t0", "side", map[string]any{}), model.Call("t1", "lookup", map[string]any{})), nil
	})
	autoPrompt := hook.Func(func(ctx context.Context, ev *agent.AfterInvocationEvent) error {
		if ev.Result != nil && ev.Result.Interrupted() {
			ev.Resume(agent.Text("more")) // the callback's bug: a prompt, not answers
		}
		return nil
	})
	g := build(t, graph.NewBuilder().AddNode("asks", agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{lookup, side}, Hooks: []hook.Provider{autoPrompt}})),
		graph.Config{ID: "g"})
	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	assert.ErrorIs(t, res.Node("asks").Err, interrupt.ErrResumeRequired)
	assert.EqualValues(t, 1, sides.Load(), "the tool that ran is not run again")
	assert.Equal(t, 1, seen.count(), "the model is asked once")
	assert.Equal(t, []string{"user:first"}, seen.last(), "the prompt is not given twice")
}

// SPEC M6, I7, A7: answering a node's gate again with the same "y" while
// the node's agent waits in its tool updates the answer and changes
// nothing else: the node still waits for its agent's answer (the run
// lists that interrupt), the model is not called again, and the tool that
// had its result does not run again; the agent's answer then finishes it.
func TestGraph_ReansweringAGateWhileTheAgentWaitsKeepsTheAgentsInvocation(t *testing.T) {
	withAndWithoutSession(t, func(t *testing.T, session func(graph.Config) graph.Config) {
		ctx := context.Background()
		seen := &seenModel{}
		var sides atomic.Int32
		r := newRecorder()
		cfg := session(graph.Config{ID: "g", Hooks: []hook.Provider{gate(r, "asks")}})
		g := build(t, graph.NewBuilder().AddNode("asks", askingNode(seen, &sides)), cfg)
		gateID, res := pastTheGate(t, g, "first")
		agentAsk := res.Interrupts[0].ID

		res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y")))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusInterrupted, res.Status, "%v", res.Node("asks").Err)
		require.Len(t, res.Interrupts, 1)
		assert.Equal(t, agentAsk, res.Interrupts[0].ID)
		assert.Equal(t, 1, seen.count(), "the model is not asked again")

		res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(agentAsk, "y")))
		require.NoError(t, err)
		assert.Equal(t, multiagent.StatusCompleted, res.Status, "%v", res.Node("asks").Err)
		assert.EqualValues(t, 1, sides.Load(), "the side tool ran once")
		assert.Equal(t, []string{"user:first", "assistant:[tool]", "user:[tool]"}, seen.last())
	})
}

// SPEC M6, M11, I7: the same for a nested graph: answering its node's
// gate again while an agent inside it waits leaves the nested run
// waiting; the inner agent's answer then finishes both.
func TestGraph_ReansweringAGateWhileANestedRunWaitsKeepsTheNestedRun(t *testing.T) {
	ctx := context.Background()
	seen := &seenModel{}
	r := newRecorder()
	inner := graph.NewBuilder().AddNode("deep", askingNode(seen, nil))
	g := build(t, graph.NewBuilder().AddNode("mid", inner.AsNode(graph.Config{})),
		graph.Config{ID: "g", Hooks: []hook.Provider{gate(r, "mid")}, Session: manager(t, memory.New(), "s")})
	gateID, res := pastTheGate(t, g, "first")
	deepAsk := res.Interrupts[0].ID

	res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "%v", res.Node("mid").Err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, deepAsk, res.Interrupts[0].ID)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(deepAsk, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status, "%v", res.Node("mid").Err)
	assert.Equal(t, 2, seen.count())
}

// SPEC M10, S5, S6, A3: a crash after any save of a new run whose node's
// agent held what a dead run left (here right after the orchestrator
// saved the new run's start, before the node's runner dropped that) must
// not bring the dead run back: carried on in a new process, the node runs
// the new run's prompt (its agent asks again for it), not the dead run's
// interrupt as if it were the new run's, and its agent ends with the new
// run's conversation alone, its prompt given once.
func TestGraphCrash_NewRunCutOffBeforeTheDeadInvocationWasDroppedRunsTheNewPrompt(t *testing.T) {
	ctx := context.Background()
	cs := &copyingStore{Store: memory.New(), session: "s"}
	var fail atomic.Bool
	fail.Store(true)
	topology := func(seen *seenModel) *graph.Builder {
		return graph.NewBuilder().AddNode("asks", askingNode(seen, nil)).AddNode("flaky", flakyNode(&fail))
	}
	g := build(t, topology(&seenModel{}), graph.Config{ID: "g", Session: manager(t, cs, "s")})
	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	fail.Store(false)
	n0 := cs.made()
	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))
	copies := cs.since(n0)
	require.NotEmpty(t, copies)

	for i, exp := range copies {
		t.Run(fmt.Sprintf("copy %d", i), func(t *testing.T) {
			st := memory.New()
			require.NoError(t, export.Write(ctx, st, exp))
			seen := &seenModel{}
			g2 := build(t, topology(seen), graph.Config{ID: "g", Session: manager(t, st, "s")})
			before, err := g2.Status(ctx)
			require.NoError(t, err)
			if i == 0 {
				require.Equal(t, multiagent.StatusExecuting, before.Status, "the first copy is of the new run's start")
			}
			finish(t, g2)
			h := storedHistory(t, st, "s", func(k persistence.Key) bool { return k.ID == "g:asks:asks" })
			assert.Equal(t, []string{"user:second", "assistant:[tool]", "user:[tool]", "assistant:done"}, h, "copy %d", i)
			require.NoError(t, g2.Close(ctx))
		})
	}
}

// SPEC M10, M11, S5: the same one level down: a crash after any save of a
// new run whose nested graph held the run a dead parent run left must not
// bring that nested run back: carried on in a new process, the nested
// graph starts afresh on the new prompt, and its agent ends with the new
// run's conversation alone.
func TestGraphCrash_NewRunCutOffBeforeTheDeadNestedRunWasDroppedRunsTheNewPrompt(t *testing.T) {
	ctx := context.Background()
	cs := &copyingStore{Store: memory.New(), session: "s"}
	var fail atomic.Bool
	fail.Store(true)
	topology := func(seen *seenModel) *graph.Builder {
		inner := graph.NewBuilder().AddNode("deep", askingNode(seen, nil))
		return graph.NewBuilder().AddNode("mid", inner.AsNode(graph.Config{})).AddNode("flaky", flakyNode(&fail))
	}
	g := build(t, topology(&seenModel{}), graph.Config{ID: "g", Session: manager(t, cs, "s")})
	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	require.Equal(t, multiagent.StatusInterrupted, res.Node("mid").Status)
	fail.Store(false)
	n0 := cs.made()
	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))
	copies := cs.since(n0)

	for i, exp := range copies {
		t.Run(fmt.Sprintf("copy %d", i), func(t *testing.T) {
			st := memory.New()
			require.NoError(t, export.Write(ctx, st, exp))
			g2 := build(t, topology(&seenModel{}), graph.Config{ID: "g", Session: manager(t, st, "s")})
			finish(t, g2)
			h := storedHistory(t, st, "s", anyAgent)
			require.Len(t, h, 4, "copy %d: %q", i, h)
			assert.Contains(t, h[0], "second", "copy %d: %q", i, h)
			assert.NotContains(t, h[0], "first", "copy %d", i)
			require.NoError(t, g2.Close(ctx))
		})
	}
}

// SPEC M10, S6, A3: a node whose last run completed its agent's
// invocation but failed (an AfterNodeCall callback failed) holds nothing
// unfinished: a crash after any save of the next run, carried on in a new
// process, keeps what that invocation added and carries the new run's own
// invocation on (its tool runs once), as the run does without a crash.
func TestGraphCrash_NewRunAfterAFailedAfterNodeCallKeepsTheCompletedInvocation(t *testing.T) {
	ctx := context.Background()
	cs := &copyingStore{Store: memory.New(), session: "s"}
	var failHook atomic.Bool
	failHook.Store(true)
	after := hook.Func(func(ctx context.Context, ev *multiagent.AfterNodeCallEvent) error {
		if failHook.Load() {
			return errors.New("after hook failed")
		}
		return nil
	})
	var sides atomic.Int32
	topology := func(seen *seenModel) *graph.Builder {
		return graph.NewBuilder().AddNode("asks", askingNode(seen, &sides))
	}
	cfg := func(st persistence.Store) graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s"), Hooks: []hook.Provider{after}}
	}
	g := build(t, topology(&seenModel{}), cfg(cs))
	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	res, err = g.Invoke(ctx, answerAll(res, "y"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status, "the agent completed, its node failed")
	failHook.Store(false)
	n0 := cs.made()
	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))
	copies := cs.since(n0)
	want := []string{"user:first", "assistant:[tool]", "user:[tool]", "assistant:done", "user:second", "assistant:[tool]", "user:[tool]", "assistant:done"}

	for i, exp := range copies {
		t.Run(fmt.Sprintf("copy %d", i), func(t *testing.T) {
			st := memory.New()
			require.NoError(t, export.Write(ctx, st, exp))
			var before []string
			for _, rec := range exp.Records {
				if rec.Kind == persistence.KindAgent {
					for _, raw := range rec.Messages {
						m, err := model.ParseMessage(raw)
						require.NoError(t, err)
						before = append(before, history([]model.Message{m})...)
					}
				}
			}
			sides.Store(0)
			g2 := build(t, topology(&seenModel{}), cfg(st))
			finish(t, g2)
			h := storedHistory(t, st, "s", anyAgent)
			assert.Equal(t, want, h, "copy %d (the agent held %q)", i, before)
			assert.LessOrEqual(t, sides.Load(), int32(1), "copy %d: the side tool runs at most once more", i)
			require.NoError(t, g2.Close(ctx))
		})
	}
}
