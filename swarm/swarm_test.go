package swarm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// SPEC M9: after a node stops with a handoff, its target runs next and
// is told the handoff message, the user's request, who worked on it and
// what they shared; a run without a further handoff completes.
func TestSwarm_HandoffRunsTargetWithHandoffMessageAndSharedContext(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().
		AddNode(swarm.Node{Agent: teamAgent(r, "researcher", handoff{to: "coder", message: "write the parser",
			context: map[string]any{"format": "csv", "rows": 3}}), Description: "finds facts"}).
		AddNode(swarm.Node{Agent: teamAgent(r, "coder", handoff{}), Description: "writes code"})
	s := build(t, b, swarm.Config{})

	res, err := s.Invoke(ctx, agent.Text("parse the logs"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Empty(t, res.Message)
	assert.Equal(t, []string{"researcher", "coder"}, res.ExecutionOrder)
	assert.Equal(t, 2, res.ExecutionCount)
	assert.Equal(t, "coder done", res.Text())
	assert.Equal(t, "researcher done: Handing off to coder: write the parser", res.Node("researcher").Text())

	require.Len(t, r.prompts("researcher"), 1)
	first := r.prompts("researcher")[0]
	assert.Contains(t, first, "User request: parse the logs")
	assert.Contains(t, first, "- coder: writes code")
	assert.Contains(t, first, swarm.HandoffTool)
	assert.NotContains(t, first, "Handoff message")
	assert.NotContains(t, first, "worked on this so far")

	require.Len(t, r.prompts("coder"), 1)
	next := r.prompts("coder")[0]
	assert.Contains(t, next, "Handoff message from researcher: write the parser")
	assert.Contains(t, next, "User request: parse the logs")
	assert.Contains(t, next, "Agents that worked on this so far, in order: researcher")
	assert.Contains(t, next, `- researcher: {"format":"csv","rows":3}`)
	assert.Contains(t, next, "- researcher: finds facts")
	assert.NotContains(t, next, "- coder:", "an agent is not offered itself")
}

// SPEC M9: the entry point is the first node unless one is set; a run
// whose entry node does not hand off completes with that node alone.
func TestSwarm_EntryPointIsFirstNodeUnlessSet(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, entry, want string
	}{
		{name: "default", want: "a"},
		{name: "given", entry: "b", want: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{})).AddAgent(teamAgent(r, "b", handoff{}))
			if tc.entry != "" {
				b.SetEntryPoint(tc.entry)
			}
			res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("hi"))
			require.NoError(t, err)
			assert.Equal(t, multiagent.StatusCompleted, res.Status)
			assert.Equal(t, []string{tc.want}, res.ExecutionOrder)
			assert.Equal(t, tc.want+" done", res.Text())
		})
	}
}

// SPEC M9: a node id is the agent's ID, else its Name; the agent's
// description defaults to the first line of its system prompt.
func TestSwarm_NodeIDIsAgentIDOrNameAndDescriptionDefaultsToSystemPrompt(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	named := teamAgent(r, "writer", handoff{})
	named.ID, named.Name = "", "writer"
	named.SystemPrompt = "Writes the final report.\nMore detail the others need not see."
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "lead", handoff{to: "writer", message: "write it"})).AddAgent(named)
	res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("report"))
	require.NoError(t, err)
	assert.Equal(t, []string{"lead", "writer"}, res.ExecutionOrder)
	require.Len(t, r.prompts("lead"), 1)
	assert.Contains(t, r.prompts("lead")[0], "- writer: Writes the final report.\n")
	assert.NotContains(t, r.prompts("lead")[0], "More detail")
}

// SPEC M9: the switch happens after the current node stops: the agent
// that hands off finishes its turn before its target starts.
func TestSwarm_HandoffTakesEffectOnlyAfterTheNodeStops(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "yours"})).AddAgent(teamAgent(r, "b", handoff{}))
	res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"model:a", "model:a", "model:b"}, r.events(), "a answers after its handoff call, then b starts")
}

// SPEC M9: a handoff to an agent the swarm does not have is an error
// result for the model and switches nothing.
func TestSwarm_HandoffToUnknownAgentIsAnErrorResult(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "zed", message: "help"})).AddAgent(teamAgent(r, "b", handoff{}))
	res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"a"}, res.ExecutionOrder)
	assert.Equal(t, "a done: Error: Agent 'zed' not found in swarm", res.Text())
	require.NotNil(t, res.Node("a").Agent)
	assert.Equal(t, 0, r.count("model:b"))
}

// SPEC M9: when a node hands off more than once in its run, the last
// handoff wins.
func TestSwarm_LastHandoffOfANodeRunWins(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		switch trs := last.ToolResults(); {
		case len(trs) == 0:
			return model.ToolTurn(model.Call("h1", swarm.HandoffTool, map[string]any{"agent_name": "b", "message": "first"})), nil
		case trs[0].ToolUseID == "h1":
			return model.ToolTurn(model.Call("h2", swarm.HandoffTool, map[string]any{"agent_name": "c", "message": "second"})), nil
		}
		return model.TextTurn("a done"), nil
	})
	b := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m}).AddAgent(teamAgent(r, "b", handoff{})).AddAgent(teamAgent(r, "c", handoff{}))
	res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, res.ExecutionOrder)
	require.Len(t, r.prompts("c"), 1)
	assert.Contains(t, r.prompts("c")[0], "Handoff message from a: second")
}

// SPEC M9: every agent is given handoff_to_agent(agent_name, message,
// context), context an optional JSON object or null, beside its own tools.
func TestSwarm_AgentsAreGivenTheHandoffTool(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var specs []model.ToolSpec
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		mu.Lock()
		specs = append([]model.ToolSpec(nil), req.Tools...)
		mu.Unlock()
		return model.TextTurn("done"), nil
	})
	own := tool.New("own", "the agent's own tool", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) { return "", nil })
	b := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m, Tools: []tool.Tool{own}})
	_, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, specs, 2)
	assert.Equal(t, "own", specs[0].Name)
	assert.Equal(t, swarm.HandoffTool, specs[1].Name)
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	require.NoError(t, json.Unmarshal(specs[1].InputSchema, &schema))
	assert.ElementsMatch(t, []string{"agent_name", "message"}, schema.Required)
	assert.Equal(t, "string", schema.Properties["agent_name"].Type)
	assert.Equal(t, "string", schema.Properties["message"].Type)
	assert.ElementsMatch(t, []any{"null", "object"}, schema.Properties["context"].Type)
}

// SPEC M9: a prompt on a finished run starts a fresh run: the node
// history and the shared context of the previous run are gone.
func TestSwarm_FreshRunForgetsPreviousHistoryAndSharedContext(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "go on", context: map[string]any{"k": "v"}})).
		AddAgent(teamAgent(r, "b", handoff{}))
	s := build(t, b, swarm.Config{})
	for _, task := range []string{"one", "two"} {
		res, err := s.Invoke(ctx, agent.Text(task))
		require.NoError(t, err)
		assert.Equal(t, multiagent.StatusCompleted, res.Status)
		assert.Equal(t, []string{"a", "b"}, res.ExecutionOrder)
	}
	ps := r.prompts("b")
	require.Len(t, ps, 2)
	assert.Contains(t, ps[1], "User request: two")
	assert.Contains(t, ps[1], "in order: a\n")
	assert.Equal(t, 1, strings.Count(ps[1], `- a: {"k":"v"}`))
	assert.NotContains(t, r.prompts("a")[1], "worked on this so far")
}

// SPEC M3, M9: the multiagent hooks fire in order around a two-node
// handoff.
func TestSwarm_HookOrderAroundTwoNodeHandoff(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	var mu sync.Mutex
	var got []string
	rec := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
	}
	hooks := []hook.Provider{
		hook.Func(func(ctx context.Context, ev *multiagent.BeforeMultiAgentInvocationEvent) error {
			rec("BeforeMultiAgentInvocation:" + ev.Source)
			return nil
		}),
		hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
			rec("BeforeNodeCall:" + ev.NodeID)
			return nil
		}),
		hook.Func(func(ctx context.Context, ev *multiagent.AfterNodeCallEvent) error {
			rec("AfterNodeCall:" + ev.NodeID + ":" + string(ev.Result.Status))
			return nil
		}),
		hook.Func(func(ctx context.Context, ev *multiagent.AfterMultiAgentInvocationEvent) error {
			rec("AfterMultiAgentInvocation:" + string(ev.Result.Status))
			return nil
		}),
	}
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "yours"})).AddAgent(teamAgent(r, "b", handoff{}))
	_, err := build(t, b, swarm.Config{Hooks: hooks}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"BeforeMultiAgentInvocation:" + swarm.DefaultID,
		"BeforeNodeCall:a", "AfterNodeCall:a:COMPLETED",
		"BeforeNodeCall:b", "AfterNodeCall:b:COMPLETED",
		"AfterMultiAgentInvocation:COMPLETED",
	}, got)
}

// SPEC M12: Stream yields each node's start and stop, tagged with the
// node path, the handoff between them (from the node path to the next
// node's id) once the handing node has stopped, and ends with the result.
func TestSwarmStream_YieldsNodeStartsStopsAndHandoffsThenResult(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "yours"})).AddAgent(teamAgent(r, "b", handoff{}))
	s := build(t, b, swarm.Config{ID: "team"})
	var got []string
	for ev, err := range s.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *multiagent.NodeStartEvent:
			got = append(got, "start "+e.Node)
		case *multiagent.NodeStopEvent:
			got = append(got, "stop "+e.Node+" "+string(e.Result.Status))
		case *multiagent.HandoffEvent:
			got = append(got, "handoff "+e.From+" -> "+e.To)
		case *multiagent.ResultEvent:
			got = append(got, "result "+string(e.Result.Status))
		}
	}
	assert.Equal(t, []string{"start team/a", "stop team/a COMPLETED", "handoff team/a -> b", "start team/b", "stop team/b COMPLETED", "result COMPLETED"}, got)
}

// SPEC M9: with ResetOnRevisit an agent handed the work again starts from
// its initial history; without it, it carries on its conversation.
func TestSwarm_ResetOnRevisitStartsRevisitedAgentAfresh(t *testing.T) {
	ctx := context.Background()
	for _, reset := range []bool{false, true} {
		t.Run(map[bool]string{false: "carry on", true: "reset"}[reset], func(t *testing.T) {
			r := newRecorder()
			var mu sync.Mutex
			var seen []int // messages a's model saw at each prompt
			m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
				last, _ := req.LastMessage()
				if len(last.ToolResults()) > 0 {
					return model.TextTurn("a handed off"), nil
				}
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, len(req.Messages))
				if len(seen) == 1 {
					return model.ToolTurn(model.Call("h1", swarm.HandoffTool, map[string]any{"agent_name": "b", "message": "check"})), nil
				}
				return model.TextTurn("a done"), nil
			})
			b := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m}).
				AddAgent(teamAgent(r, "b", handoff{to: "a", message: "checked"})).ResetOnRevisit(reset)
			res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusCompleted, res.Status)
			assert.Equal(t, []string{"a", "b", "a"}, res.ExecutionOrder)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, seen, 2)
			assert.Equal(t, 1, seen[0])
			if reset {
				assert.Equal(t, 1, seen[1], "only the new prompt")
			} else {
				assert.Equal(t, 5, seen[1], "the first run's four messages, then the new prompt")
			}
		})
	}
}

// SPEC M9: the task's non-text blocks (an image) follow the swarm
// context in every node's input; its text is the user request.
func TestSwarm_NonTextTaskBlocksArePassedToEveryNode(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	kinds := map[string][]string{}
	texts := map[string]string{}
	agentSeeing := func(id string, h *handoff) agent.Config {
		m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
			last, _ := req.LastMessage()
			if len(last.ToolResults()) > 0 {
				return model.TextTurn(id + " done"), nil
			}
			mu.Lock()
			for _, b := range last.Content {
				kinds[id] = append(kinds[id], b.Kind())
			}
			texts[id] = last.Text()
			mu.Unlock()
			if h == nil {
				return model.TextTurn(id + " done"), nil
			}
			return model.ToolTurn(model.Call("h1", swarm.HandoffTool, h.args())), nil
		})
		return agent.Config{ID: id, Model: m}
	}
	image := json.RawMessage(`{"image":{"format":"png","source":{"bytes":"AA=="}}}`)
	b := swarm.NewBuilder().AddAgent(agentSeeing("a", &handoff{to: "b", message: "describe it"})).AddAgent(agentSeeing("b", nil))
	res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Blocks(model.Text("what is in this picture?"), model.ContentBlock{Other: image}))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"a", "b"} {
		assert.Equal(t, []string{"text", "image"}, kinds[id], id)
		assert.Contains(t, texts[id], "User request: what is in this picture?", id)
	}
}

// SPEC I7: Resume() with no responses on a swarm that waits for nothing
// is rejected with ErrNotInterrupted, as an agent rejects it.
func TestSwarm_EmptyResumeWhileNotInterruptedIsNotInterrupted(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	s := build(t, swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{})), swarm.Config{})
	_, err := s.Invoke(ctx, agent.Resume())
	require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	_, err = s.Invoke(ctx, agent.Resume())
	require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
}
