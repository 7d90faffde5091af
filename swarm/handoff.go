package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

var _ actors.StreamingRunner = (*handoffRunner)(nil)

// HandoffTool is the name of the tool the swarm gives every agent.
const HandoffTool = "handoff_to_agent"

const handoffDescription = "Pass the work to another agent of the swarm. The other agent starts once you have " +
	"finished your answer. agent_name names it, message tells it what to do, and context (a JSON object, " +
	"optional) shares what you learned with every agent that works on the task after you."

// handoffInput is the tool's input (its schema is derived from it).
type handoffInput struct {
	AgentName string          `json:"agent_name" jsonschema:"the name of the agent to hand off to"`
	Message   string          `json:"message" jsonschema:"what the next agent should do"`
	Context   *map[string]any `json:"context,omitempty" jsonschema:"knowledge to share with the agents after you (a JSON object), or null"`
}

// unknownAgentError is the tool's answer to a handoff to an agent the
// swarm does not have; its text is what the model sees.
type unknownAgentError struct{ name string }

func (e *unknownAgentError) Error() string {
	return fmt.Sprintf("Error: Agent '%s' not found in swarm", e.name)
}

// toolError is another refusal of the tool, as the model sees it.
type toolError string

func (e toolError) Error() string { return string(e) }

// handoffTool validates a handoff and tells the model it is recorded. It
// switches nothing: the swarm reads the handoff from the agent's history
// once the node's run has ended.
func handoffTool(t *team) tool.Tool {
	return tool.New(HandoffTool, handoffDescription, func(ctx context.Context, tc *tool.Context, in handoffInput) (string, error) {
		if !t.has(in.AgentName) {
			return "", &unknownAgentError{name: in.AgentName}
		}
		if in.Context != nil {
			for k := range *in.Context {
				if k == "" {
					return "", toolError("Error: context keys must be non-empty strings")
				}
			}
		}
		return fmt.Sprintf("Handing off to %s: %s", in.AgentName, in.Message), nil
	})
}

// handoffArgs decodes a handoff tool use as the swarm keeps it.
type handoffArgs struct {
	AgentName string          `json:"agent_name"`
	Message   string          `json:"message"`
	Context   json.RawMessage `json:"context"`
}

// decodeHandoff reads a handoff tool use; ok is false for an input the
// tool would have refused.
func decodeHandoff(tu model.ToolUse) (*braidv1.Handoff, bool) {
	var a handoffArgs
	if err := tu.DecodeInput(&a); err != nil || a.AgentName == "" {
		return nil, false
	}
	h := &braidv1.Handoff{To: a.AgentName, Message: a.Message}
	raw := bytes.TrimSpace(a.Context)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
	case raw[0] == '{':
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			return nil, false
		}
		h.Context = buf.Bytes()
	default:
		return nil, false
	}
	return h, true
}

// lastHandoff finds the handoff of the node's current run in an agent's
// history: scanning back from the end to the run's prompt (the last user
// message that holds no tool results), the last handoff tool use whose
// result is a success names the next agent and its message. Its context
// is the contexts of every successful handoff of the run merged in call
// order (a later call's key wins), as each call told the model that what
// it shared is kept. Because a cycle's tool uses and results enter the
// history together, once every tool of the cycle has a result, a handoff
// made beside an interrupted tool counts only after the resume; and as
// the history is the agent's durable state, it is found after a restart.
func lastHandoff(msgs []model.Message) *braidv1.Handoff {
	var made []*braidv1.Handoff             // latest first
	var results map[string]model.ToolStatus // of the message after the one looked at
scan:
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == model.RoleUser {
			trs := m.ToolResults()
			if len(trs) == 0 {
				break scan // the run's prompt: the handoffs before it are of earlier runs
			}
			results = make(map[string]model.ToolStatus, len(trs))
			for _, tr := range trs {
				results[tr.ToolUseID] = tr.Status
			}
			continue
		}
		uses := m.ToolUses()
		for j := len(uses) - 1; j >= 0; j-- {
			tu := uses[j]
			if tu.Name != HandoffTool || results[tu.ToolUseID] != model.ToolSuccess {
				continue
			}
			if h, ok := decodeHandoff(tu); ok {
				made = append(made, h)
			}
		}
		results = nil
	}
	if len(made) == 0 {
		return nil
	}
	h := made[0]
	if len(made) > 1 {
		h.Context = mergeContexts(made)
	}
	return h
}

// mergeContexts merges the contexts of handoffs listed latest first into
// one JSON object, a later handoff's key winning; nil when none shared
// anything.
func mergeContexts(latestFirst []*braidv1.Handoff) []byte {
	merged := map[string]json.RawMessage{}
	for i := len(latestFirst) - 1; i >= 0; i-- {
		var values map[string]json.RawMessage
		if json.Unmarshal(latestFirst[i].GetContext(), &values) != nil {
			continue // no context (decodeHandoff admits only objects)
		}
		for k, v := range values {
			merged[k] = v
		}
	}
	if len(merged) == 0 {
		return nil
	}
	raw, err := json.Marshal(merged)
	if err != nil { // values read from JSON encode again: cannot happen
		return latestFirst[0].GetContext()
	}
	return raw
}

// agentNode is a swarm node: an agentnode.Agent whose agent has the
// handoff tool, and whose runner reports the handoff its run made.
type agentNode struct {
	cfg  agent.Config
	team *team
}

// NodeKind implements actors.KindedNode.
func (n *agentNode) NodeKind() actors.NodeKind { return actors.NodeKindAgent }

// OpenNode implements actors.Node. The handoff slot is the node's own:
// the recorder hook writes it at the end of every invocation of the
// node's agent, the runner reads it when the run is over.
func (n *agentNode) OpenNode(ctx context.Context, env actors.NodeEnv) (actors.NodeRunner, error) {
	slot := &atomic.Pointer[braidv1.Handoff]{}
	cfg := n.cfg
	cfg.Tools = append(slices.Clip(cfg.Tools), handoffTool(n.team))
	cfg.Hooks = append(slices.Clip(cfg.Hooks), hook.Func(func(ctx context.Context, ev *agent.AfterInvocationEvent) error {
		slot.Store(lastHandoff(ev.Agent.Messages()))
		return nil
	}))
	// A run that a crash cut off after its agent had finished is not run
	// again, so the hook does not fire: read the handoff from the history.
	finished := agentnode.Finished(func(ctx context.Context, a *agent.Agent, res *braidv1.NodeResult) {
		if slot.Load() != nil {
			return
		}
		if snap, err := a.Snapshot(ctx); err == nil {
			slot.Store(lastHandoff(snap.Messages))
		}
	})
	inner, err := agentnode.Agent(cfg, finished).OpenNode(ctx, env)
	if err != nil {
		return nil, err
	}
	return &handoffRunner{inner: inner, slot: slot}, nil
}

// handoffRunner runs a node's agent and puts the handoff its run made
// into the result. It forwards the optional interface of the runner it
// wraps (streaming); the deferred save needs nothing of it
// (actors.DeferCommit travels in the context).
type handoffRunner struct {
	inner actors.NodeRunner
	slot  *atomic.Pointer[braidv1.Handoff]
}

// RunNode implements actors.NodeRunner.
func (r *handoffRunner) RunNode(ctx context.Context, run *braidv1.NodeRun) *braidv1.NodeResult {
	return r.run(ctx, run, nil)
}

// StreamNode implements actors.StreamingRunner.
func (r *handoffRunner) StreamNode(ctx context.Context, run *braidv1.NodeRun, emit func(*braidv1.MultiAgentEvent)) *braidv1.NodeResult {
	return r.run(ctx, run, emit)
}

func (r *handoffRunner) run(ctx context.Context, run *braidv1.NodeRun, emit func(*braidv1.MultiAgentEvent)) *braidv1.NodeResult {
	r.slot.Store(nil)
	var res *braidv1.NodeResult
	if sr, ok := r.inner.(actors.StreamingRunner); ok && emit != nil {
		res = sr.StreamNode(ctx, run, emit)
	} else {
		res = r.inner.RunNode(ctx, run)
	}
	if h := r.slot.Load(); h != nil && res.GetStatus() == braidv1.NodeStatus_NODE_STATUS_COMPLETED {
		res.Handoff = h
	}
	return res
}

// Progress implements actors.NodeRunner.
func (r *handoffRunner) Progress(ctx context.Context) (int64, error) { return r.inner.Progress(ctx) }

// Close implements actors.NodeRunner.
func (r *handoffRunner) Close(ctx context.Context) error { return r.inner.Close(ctx) }
