package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/braidhq/braid/internal/runorder"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/internal/runclient"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/proto/braidv1"
)

// Graph is a client handle to a graph's orchestrator actor (SPEC R1). All
// methods are safe for concurrent use; invocations run one at a time.
type Graph struct {
	o *actors.Orchestrator
}

// Build validates the graph and starts its orchestrator actor, which
// opens the nodes (building their agents) and restores the run from
// cfg.Session. ctx bounds the wait: if it ends first, Build returns its
// error at once, and a load that still waits for its store keeps the
// graph's identity bound until it ends (SPEC R5). The builder can be
// changed and built again afterwards; the graph does not see the changes.
func (b *Builder) Build(ctx context.Context, cfg Config) (*Graph, error) {
	if cfg.System == nil {
		sys, err := actors.Default()
		if err != nil {
			return nil, err
		}
		cfg.System = sys
	}
	o, err := b.start(ctx, cfg, "")
	if err != nil {
		return nil, err
	}
	return &Graph{o: o}, nil
}

func (b *Builder) start(ctx context.Context, cfg Config, ownerPath string) (*actors.Orchestrator, error) {
	t, err := b.validate()
	if err != nil {
		return nil, err
	}
	if cfg.ID == "" {
		cfg.ID = DefaultID
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hooks, err := multiagent.NewHooks(Kind, cfg.ID, ownerPath, cfg.Hooks...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBuild, err)
	}
	o, err := actors.NewOrchestrator(ctx, cfg.System, actors.OrchestratorConfig{
		Kind: Kind, ID: cfg.ID, OwnerPath: ownerPath, Nodes: t.nodes, Shape: t.shape(), Policy: newPolicy(t), Hooks: hooks,
		Session: cfg.Session, MaxNodeExecutions: cfg.MaxNodeExecutions, ExecutionTimeout: cfg.ExecutionTimeout,
		NodeTimeout: cfg.NodeTimeout, IdleTimeout: cfg.IdleTimeout,
	})
	if err != nil {
		return nil, err
	}
	if err := hooks.Initialized(ctx); err != nil {
		_ = o.Close(ctx) // waited for only while ctx lasts (SPEC R5)
		return nil, err
	}
	return o, nil
}

// Invoke runs the graph on a task (a prompt), or resumes it (agent.Resume
// with the answers to its interrupts), and returns the run's result. A
// prompt while the run is interrupted, a response to an unknown id and a
// mix of both are rejected with nothing changed (SPEC I7, M5), and so is
// a response while it is not interrupted (interrupt.ErrNotInterrupted).
// With a session, a refusal for the run's interrupt state (not
// interrupted, unknown id, a prompt while interrupted) is first checked
// against the store: if another writer (another process) saved the run
// since this one read it, the call fails with persistence.ErrConflict (a
// *persistence.ConflictError) instead, and the run is taken from the
// store, so the next call goes on from it (SPEC S4).
// A run cut off by a crash (Status EXECUTING after a restart) is carried
// on with the empty input agent.Input{}; a new task is refused with
// actors.ErrIncompleteRun until then. The values of ctx reach the run's
// hooks and nodes (their agents' hooks, models and tools), in this
// process.
func (g *Graph) Invoke(ctx context.Context, in agent.Input) (*multiagent.Result, error) {
	return runclient.Invoke(ctx, g.o, in)
}

// Stream runs like Invoke and yields the run's events as they happen
// (SPEC M12), the last one a *multiagent.ResultEvent. Interrupt events
// come after the run is saved. A consumer that stops early leaves the run
// going on to its end unread; a later resume can finish it. So does one
// whose ctx ends: its stream yields no more events, even those already
// queued, and ends with ctx's error.
func (g *Graph) Stream(ctx context.Context, in agent.Input) iter.Seq2[multiagent.Event, error] {
	return runclient.Stream(ctx, g.o, in)
}

// Status returns the run as it stands; answered at once, while nodes run.
// A node's interrupts are listed once the graph's save holds them (until
// then the node is shown still running), so every interrupt it lists can
// be answered (SPEC I9). Every node that runs is listed EXECUTING: one in
// its first run after the nodes with results, one that runs again
// (resumed, or revisited in a cycle) with the time, usage and run count of
// its runs so far, not with its earlier run's result, error or interrupts.
func (g *Graph) Status(ctx context.Context) (*multiagent.Result, error) {
	return runclient.Status(ctx, g.o)
}

// Cancel stops the running invocation, if any, and reports whether one
// ran: nothing new is scheduled, the running nodes are cancelled and end
// CANCELLED, and the invocation returns the run as it then stands (status
// CANCELLED unless a node failed or interrupted). Answered at once.
func (g *Graph) Cancel(ctx context.Context) (bool, error) { return g.o.Cancel(ctx) }

// Binding returns the graph's claim on its orchestrator's identity, for
// code that addresses it by message (the protocol is
// proto/braidv1/multiagent.proto: MultiAgentInvoke, answered with
// MultiAgentResult or Error).
func (g *Graph) Binding() *actors.Binding { return g.o.Binding() }

// Close stops the graph's actors (its nodes' agents included) and
// releases their identities; the session stays in the store. It waits
// for that or for ctx to end; the close goes on either way, and a later
// Close waits for it (actors.Orchestrator.Close).
// A node or hook of it that closes it passes its own context: one that
// cannot end would have Close wait for the run it is called from.
func (g *Graph) Close(ctx context.Context) error { return g.o.Close(ctx) }

// State is what an edge condition sees of the run.
type State struct{ v *actors.RunView }

// Status returns a node's status.
func (s *State) Status(node string) multiagent.Status {
	return multiagent.StatusFromWire(s.v.Status(node))
}

// Result returns a node's last result (nil before it finished a run).
func (s *State) Result(node string) *multiagent.NodeResult {
	w := s.v.Result(node)
	if w == nil {
		return nil
	}
	r, err := multiagent.NodeResultFromWire(w)
	if err != nil {
		return nil
	}
	return r
}

// Text returns the text of a node's last result.
func (s *State) Text(node string) string { return resultText(s.v.Result(node)) }

// input is the text of a node's input: the task and what its
// dependencies produced.
func (p *policy) input(v *actors.RunView, deps []string) string {
	task := v.Task()
	if task != p.task {
		p.task, p.taskText = task, taskText(task)
	}
	var b strings.Builder
	b.WriteString("Original Task: ")
	b.WriteString(p.taskText)
	b.WriteString("\nInputs from previous nodes:")
	for _, d := range deps {
		text := ""
		if r, ok := v.LocalResult(d).(*agent.Result); ok {
			text = r.Message.Text() // in process: no decoding
		} else {
			text = resultText(v.Result(d))
		}
		b.WriteString("\nFrom ")
		b.WriteString(d)
		b.WriteString(":\n  - ")
		b.WriteString(d)
		b.WriteString(": ")
		b.WriteString(text)
	}
	return b.String()
}

// userText is the JSON of a user message of one text block.
func userText(s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	out := make([]byte, 0, len(q)+40)
	out = append(out, `{"role":"user","content":[{"text":`...)
	out = append(out, q...)
	return append(out, "}]}"...)
}

// textOnly decodes the text blocks of a JSON message or block list.
type textOnly struct {
	Content []struct {
		Text *string `json:"text"`
	} `json:"content"`
}

func (t textOnly) text() string {
	var b strings.Builder
	for _, c := range t.Content {
		if c.Text != nil {
			b.WriteString(*c.Text)
		}
	}
	return b.String()
}

func taskText(in *braidv1.AgentInput) string {
	var parts []string
	for _, raw := range in.GetMessages() {
		var m textOnly
		if json.Unmarshal(raw, &m) == nil {
			parts = append(parts, m.text())
		}
	}
	return strings.Join(parts, "\n")
}

// resultText is the text of a node result.
func resultText(w *braidv1.NodeResult) string {
	switch {
	case w == nil:
		return ""
	case w.GetAgent() != nil:
		var m textOnly
		if json.Unmarshal(w.GetAgent().GetMessage(), &m) == nil {
			return m.text()
		}
	case w.GetMultiAgent() != nil:
		// the last node whose run ended COMPLETED, as multiagent.Result.Text
		m := w.GetMultiAgent()
		r, _ := runorder.LastCompleted(m.GetExecutionOrder(), m.GetResults(), (*braidv1.NodeResult).GetNodeId,
			func(r *braidv1.NodeResult) bool { return r.GetStatus() == braidv1.NodeStatus_NODE_STATUS_COMPLETED })
		return resultText(r)
	case len(w.GetContent()) > 0:
		var blocks textOnly
		if json.Unmarshal(append(append([]byte(`{"content":`), w.GetContent()...), '}'), &blocks) == nil {
			return blocks.text()
		}
	}
	return ""
}
