package swarm

import (
	"context"
	"fmt"
	"iter"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/internal/runclient"
	"github.com/braidhq/braid/multiagent"
)

// Swarm is a client handle to a swarm's orchestrator actor (SPEC R1). All
// methods are safe for concurrent use; invocations run one at a time.
type Swarm struct {
	o *actors.Orchestrator
}

// Build validates the swarm and starts its orchestrator actor, which
// opens the nodes (building their agents, each with the handoff tool) and
// restores the run from cfg.Session. ctx bounds the wait: if it ends
// first, Build returns its error at once, and a load that still waits
// for its store keeps the swarm's identity bound until it ends (SPEC
// R5). The builder can be changed and built again afterwards; the swarm
// does not see the changes.
func (b *Builder) Build(ctx context.Context, cfg Config) (*Swarm, error) {
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
	return &Swarm{o: o}, nil
}

// start builds the orchestrator of the swarm at ownerPath ("" at the top).
func (b *Builder) start(ctx context.Context, cfg Config, ownerPath string) (*actors.Orchestrator, error) {
	t, err := b.validate()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	nodes := make([]actors.NodeSpec, len(t.members))
	for i, m := range t.members {
		nodes[i] = actors.NodeSpec{ID: m.id, Node: &agentNode{cfg: m.cfg, team: t}}
	}
	pol := newPolicy(t, limits{maxHandoffs: cfg.MaxHandoffs, maxIterations: cfg.MaxIterations,
		window: cfg.RepetitiveHandoffDetectionWindow, minUnique: cfg.RepetitiveHandoffMinUniqueAgents})
	hooks, err := multiagent.NewHooks(Kind, cfg.ID, ownerPath, cfg.Hooks...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBuild, err)
	}
	o, err := actors.NewOrchestrator(ctx, cfg.System, actors.OrchestratorConfig{
		Kind: Kind, ID: cfg.ID, OwnerPath: ownerPath, Nodes: nodes, Shape: t.shape(), Policy: pol, Hooks: hooks,
		Session: cfg.Session, ExecutionTimeout: cfg.ExecutionTimeout, NodeTimeout: cfg.NodeTimeout, IdleTimeout: cfg.IdleTimeout,
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

// Invoke runs the swarm on a task (a prompt), or resumes it (agent.Resume
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
// A prompt on a finished run starts a fresh run. A run cut off by a crash
// (Status EXECUTING after a restart) is carried on with the empty input
// agent.Input{}; a new task is refused with actors.ErrIncompleteRun until
// then. The values of ctx reach the run's hooks and nodes (their agents'
// hooks, models and tools), in this process.
func (s *Swarm) Invoke(ctx context.Context, in agent.Input) (*multiagent.Result, error) {
	return runclient.Invoke(ctx, s.o, in)
}

// Stream runs like Invoke and yields the run's events as they happen
// (SPEC M12), the last one a *multiagent.ResultEvent. Interrupt events
// come after the run is saved. A consumer that stops early leaves the run
// going on to its end unread; a later resume can finish it. So does one
// whose ctx ends: its stream yields no more events, even those already
// queued, and ends with ctx's error.
func (s *Swarm) Stream(ctx context.Context, in agent.Input) iter.Seq2[multiagent.Event, error] {
	return runclient.Stream(ctx, s.o, in)
}

// Status returns the run as it stands; answered at once, while a node runs.
// A node's interrupts are listed once the swarm's save holds them (until
// then the node is shown still running), so every interrupt it lists can
// be answered (SPEC I9). Every node that runs is listed EXECUTING: one in
// its first run after the nodes with results, one that runs again
// (resumed, or handed back to by another) with the time, usage and run
// count of its runs so far, not with its earlier run's result, error or
// interrupts.
func (s *Swarm) Status(ctx context.Context) (*multiagent.Result, error) {
	return runclient.Status(ctx, s.o)
}

// Cancel stops the running invocation, if any, and reports whether one
// ran: no handoff is followed, the running node is cancelled and ends
// CANCELLED, and the invocation returns the run as it then stands.
// Answered at once.
func (s *Swarm) Cancel(ctx context.Context) (bool, error) { return s.o.Cancel(ctx) }

// Binding returns the swarm's claim on its orchestrator's identity, for
// code that addresses it by message (proto/braidv1/multiagent.proto:
// MultiAgentInvoke, answered with MultiAgentResult or Error).
func (s *Swarm) Binding() *actors.Binding { return s.o.Binding() }

// Close stops the swarm's actors (its agents included) and releases their
// identities; the session stays in the store. It waits for that or for
// ctx to end; the close goes on either way, and a later Close waits for
// it (actors.Orchestrator.Close).
// A node or hook of it that closes it passes its own context: one that
// cannot end would have Close wait for the run it is called from.
func (s *Swarm) Close(ctx context.Context) error { return s.o.Close(ctx) }
