package agentnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// ErrConfig reports that a node's agent config sets what the orchestrator
// decides, or breaks another rule that Agent states, or that Func was
// given a nil function.
var ErrConfig = errors.New("invalid agent node config")

// Agent returns a node that runs an agent built from cfg. The node builds
// the agent when its orchestrator opens it; it sets the agent's
// OwnerPath, System and Session from the orchestrator (and, with a
// session, its IdleTimeout, over cfg's), so cfg must leave OwnerPath,
// System, Session and Restore empty: the agent's state is the
// orchestrator's session's. cfg.ID defaults to the node's id and must not
// contain ":". cfg.Messages, the history the agent starts with (and
// gets back on a reset), must not end with a user message: every run
// gives the agent a prompt.
func Agent(cfg agent.Config, opts ...Option) actors.Node {
	n := &agentNode{cfg: cfg}
	for _, o := range opts {
		o(n)
	}
	return n
}

// orchestratorField names the first field of cfg that the orchestrator
// decides and cfg sets, with what to do instead.
func orchestratorField(cfg agent.Config) (field, hint string) {
	switch {
	case cfg.Session != nil:
		return "Session", "give the session to graph.Config.Session or swarm.Config.Session"
	case cfg.System != nil:
		return "System", "give the system to graph.Config.System or swarm.Config.System"
	case cfg.Restore != nil:
		return "Restore", "a node's agent is restored from its orchestrator's session"
	default:
		return "OwnerPath", "the node's path in its orchestrator is its owner path"
	}
}

// Option tweaks an agent node.
type Option func(*agentNode)

// Finished calls fn after every run of the node that completed, with the
// node's agent and the run's result (which fn may add to, such as a
// Swarm's handoff), on the node's goroutine. It is called as well when a
// run cut off by a crash turns out to have finished before it: then the
// agent did not run again, and its history is all fn can read.
func Finished(fn func(ctx context.Context, a *agent.Agent, res *braidv1.NodeResult)) Option {
	return func(n *agentNode) { n.finished = fn }
}

type agentNode struct {
	cfg      agent.Config
	finished func(ctx context.Context, a *agent.Agent, res *braidv1.NodeResult)
}

// NodeKind implements actors.KindedNode.
func (n *agentNode) NodeKind() actors.NodeKind { return actors.NodeKindAgent }

// OpenNode implements actors.Node.
func (n *agentNode) OpenNode(ctx context.Context, env actors.NodeEnv) (actors.NodeRunner, error) {
	cfg := n.cfg
	switch {
	case cfg.OwnerPath != "" || cfg.System != nil || cfg.Session != nil || cfg.Restore != nil:
		field, hint := orchestratorField(cfg)
		return nil, fmt.Errorf("%w: node %q: its agent config sets %s: leave it empty (%s); OwnerPath, System, Session and Restore are set by the orchestrator",
			ErrConfig, env.NodeID, field, hint)
	case strings.Contains(cfg.ID, ":"):
		return nil, fmt.Errorf("%w: node %q: agent id %q contains \":\"", ErrConfig, env.NodeID, cfg.ID)
	case len(cfg.Messages) > 0 && cfg.Messages[len(cfg.Messages)-1].Role == model.RoleUser:
		// Every run of a node gives its agent a prompt, which an agent
		// whose history ends with a user message refuses (ErrIncompleteRun:
		// two user messages in a row), and a reset gives it that history
		// back: the node could never run.
		return nil, fmt.Errorf("%w: node %q: agent Messages end with a user message: each run of the node gives its agent a prompt, which would follow it; end them with an assistant message, or put the context in SystemPrompt", ErrConfig, env.NodeID)
	}
	if cfg.ID == "" {
		cfg.ID = env.NodeID
	}
	cfg.OwnerPath, cfg.System = env.Path, env.System
	r := &agentRunner{session: env.Session != nil, path: env.Path, initial: model.CloneMessages(cfg.Messages), finished: n.finished}
	r.count.Store(-1)
	if env.Session != nil {
		cfg.Session = &jointSession{SessionManager: env.Session, r: r}
		cfg.IdleTimeout = env.IdleTimeout
		// Counts the agent's model calls, so that a run can tell whether
		// an invocation that failed got as far as one (staleStart).
		cfg.Hooks = append(slices.Clip(cfg.Hooks), hook.Func(func(context.Context, *agent.BeforeModelCallEvent) error {
			r.modelCalls.Add(1)
			return nil
		}))
	}
	a, err := agent.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.a = a
	return r, nil
}

type agentRunner struct {
	a        *agent.Agent
	session  bool
	path     string
	initial  []model.Message // the history the agent was built with
	finished func(ctx context.Context, a *agent.Agent, res *braidv1.NodeResult)
	// sess is the agent's writer of its current activation, whose durable
	// saves wait for the orchestrator (SPEC M10) while joint is set: from
	// the start of a run whose orchestrator takes them (DeferCommit) to
	// the run's end (EndDeferral). mu orders those steps with an
	// activation's, which may run on the agent's goroutine meanwhile.
	mu    sync.Mutex
	sess  atomic.Pointer[persistence.AgentSession]
	joint bool
	// count is the agent's message count its last run's result gave
	// (agent.Result.History), for the Progress that follows the run; -1:
	// none, Progress asks the agent.
	count atomic.Int64
	// modelCalls counts the agent's model calls (with a session only).
	modelCalls atomic.Int64
}

// jointSession gives a node's agent the orchestrator's session, with its
// durable saves deferred to the orchestrator's commit during a joint run.
type jointSession struct {
	*persistence.SessionManager
	r *agentRunner
}

// OpenAgent implements agent.Session.
func (j *jointSession) OpenAgent(ctx context.Context, id string) (*persistence.AgentSession, *persistence.AgentRecord, error) {
	s, rec, err := j.SessionManager.OpenAgent(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	j.r.mu.Lock()
	defer j.r.mu.Unlock()
	if j.r.joint {
		s.DeferDurable() // activated during a joint run
	}
	j.r.sess.Store(s)
	return s, rec, nil
}

// EndDeferral implements actors.Deferred: the run has returned, and the
// agent's saves from here on commit at once (an agent cut off by a Cancel
// or a timeout goes on for a while), carrying what is parked.
func (r *agentRunner) EndDeferral() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.joint = false
	if s := r.sess.Load(); s != nil {
		s.EndDeferral()
	}
}

// TakeDeferred implements actors.Deferred: the agent's parked save, for
// the orchestrator's commit.
func (r *agentRunner) TakeDeferred() *persistence.Staged {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.joint = false
	if s := r.sess.Load(); s != nil {
		return s.TakeDeferred()
	}
	return nil
}

// RunNode implements actors.NodeRunner.
func (r *agentRunner) RunNode(ctx context.Context, run *braidv1.NodeRun) *braidv1.NodeResult {
	return r.runNode(ctx, run, nil)
}

func (r *agentRunner) runNode(ctx context.Context, run *braidv1.NodeRun, emit func(*braidv1.MultiAgentEvent)) *braidv1.NodeResult {
	res := r.runOnce(ctx, run, emit)
	if r.finished != nil && res.GetStatus() == braidv1.NodeStatus_NODE_STATUS_COMPLETED {
		r.finished(ctx, r.a, res)
	}
	return res
}

func (r *agentRunner) runOnce(ctx context.Context, run *braidv1.NodeRun, emit func(*braidv1.MultiAgentEvent)) *braidv1.NodeResult {
	r.count.Store(-1)
	// The last run's end ended the deferral (EndDeferral: an agent cut
	// off by a timeout commits its later take-back at once); this run's
	// saves wait again, if its orchestrator takes them: a runner called
	// outside a node run saves as a lone agent does.
	if r.session {
		r.mu.Lock()
		if actors.DeferCommit(ctx, r) {
			r.joint = true
			if s := r.sess.Load(); s != nil {
				s.DeferDurable()
			}
		}
		r.mu.Unlock()
	}
	in, ok := actors.LocalInput(ctx).(agent.Input) // in process: no decoding
	if !ok {
		var err error
		if in, err = agent.InputFromWire(run.GetInput()); err != nil {
			return failed(ctx, err)
		}
	}
	reset := run.GetResetExecutor()
	if run.GetRecover() {
		dead, began, err := r.deadHeld(ctx, run, in)
		switch {
		case err != nil:
			return failed(ctx, err)
		case dead && reset: // the reset drops it
		case dead:
			if err := r.dropUnfinished(ctx, run); err != nil {
				return failed(ctx, err)
			}
		default:
			recover, base := r.recover, run.GetBase()
			if reset {
				recover = r.recoverReset
			} else if began >= 0 {
				base = began // the prompt's invocation began where the dead one was taken back to
			}
			done, res, carry, err := recover(ctx, base, in.IsResume())
			if err != nil {
				return failed(ctx, err)
			}
			if done {
				return res
			}
			if carry {
				in, reset = agent.Input{}, false // begun: after its reset
			}
		}
	}
	if reset {
		if err := r.reset(ctx); err != nil {
			return failed(ctx, err)
		}
	}
	if !run.GetRecover() && in.IsResume() && len(in.Responses()) == 0 {
		// Run again for its gate's answers alone (SPEC M6): nothing for
		// the agent, which still waits for its own.
		st, err := r.a.Status(ctx)
		if err != nil {
			return failed(ctx, err)
		}
		if st.Interrupted() {
			return waiting(st)
		}
	}
	calls := r.modelCalls.Load()
	res, err := r.invoke(ctx, in, emit)
	if err != nil && r.session && (reloaded(ctx, err) || r.staleStart(ctx, err, run, in, calls)) {
		// The agent's state was stale (loaded before another runtime ran
		// this node): it refused the input, or lost its prompt's save,
		// running nothing, and holds the stored state now, which the
		// orchestrator's run goes on from.
		res, err = r.invoke(ctx, in, emit)
	}
	if err != nil && !in.IsResume() && !run.GetRecover() && heldUnfinished(err) {
		// A prompt, and the agent still holds an invocation of a run that
		// is over (it ended FAILED or CANCELLED while the agent waited):
		// dropped, and the prompt runs (the refusal changed nothing).
		if err = r.dropUnfinished(ctx, run); err == nil {
			res, err = r.invoke(ctx, in, emit)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			_, _ = r.a.Cancel(context.WithoutCancel(ctx))
		}
		return failed(ctx, err)
	}
	r.count.Store(int64(res.History))
	actors.SetLocalResult(ctx, res)
	return agentResult(res)
}

// invoke runs the agent, streaming its events to emit when it is set.
func (r *agentRunner) invoke(ctx context.Context, in agent.Input, emit func(*braidv1.MultiAgentEvent)) (*agent.Result, error) {
	if emit == nil {
		return r.a.Invoke(ctx, in)
	}
	for ev, err := range r.a.Stream(ctx, in) {
		if err != nil {
			return nil, err
		}
		switch e := ev.(type) {
		case *agent.ResultEvent:
			return e.Result, nil
		case *agent.InterruptEvent:
			// the orchestrator streams interrupts once it has saved them
		default:
			if w, err := agent.EventToWire(ev); err == nil && w != nil {
				emit(&braidv1.MultiAgentEvent{NodePath: r.path, Event: &braidv1.MultiAgentEvent_NodeEvent{NodeEvent: w}})
			}
		}
	}
	return nil, fmt.Errorf("agent %q: its stream ended without a result", r.a.ID())
}

// StreamNode implements actors.StreamingRunner.
func (r *agentRunner) StreamNode(ctx context.Context, run *braidv1.NodeRun, emit func(*braidv1.MultiAgentEvent)) *braidv1.NodeResult {
	return r.runNode(ctx, run, emit)
}

// reset gives the agent back the history it was built with and an empty
// key/value state, and drops what it may hold unfinished from a run that
// is over (a reset is only asked for with a prompt).
func (r *agentRunner) reset(ctx context.Context) error {
	snap, err := r.a.Snapshot(ctx)
	if err != nil {
		return err
	}
	for k := range snap.State {
		if err := r.a.DeleteState(ctx, k); err != nil {
			return err
		}
	}
	return r.a.SetMessages(ctx, r.initial, agent.DropUnfinished())
}

// reloaded reports whether the invocation failed only because the
// agent's state was stale, so that it may run again: it refused the input
// for its interrupt state, found that another writer had saved its record
// since it read it (a *persistence.ConflictError that is Checked: it
// saved and ran nothing), and took the stored state. The orchestrator
// launched this run after a save of its own (its claim on the run, SPEC
// S4) and routes the input by the run it holds, saved with the agents'
// records (SPEC M10), so the input is the stored state's to judge; no
// other writer runs the node meanwhile.
func reloaded(ctx context.Context, err error) bool {
	var ce *persistence.ConflictError
	return ctx.Err() == nil && errors.As(err, &ce) && ce.Checked
}

// staleStart reports whether the invocation of a prompt failed only
// because the agent's state was stale when it began: its first save, the
// prompt's, lost to another writer (a *persistence.ConflictError naming
// the agent's own record: a conflict on another one, a hook's, is that
// writer's and fails the node), before
// any model call (calls is the count before the invocation), so nothing
// but its BeforeInvocation and MessageAdded hooks ran, and the agent took
// the stored state (SPEC S4). That happens to a node agent that believed
// itself idle when another runtime had run the node since it loaded: its
// orchestrator, stale the same way, has taken the stored run and claimed
// this run with a save of its own (see reloaded), so the prompt is the
// stored state's to take. A resume's or a recovery's first save is a
// claim on the agent's own state, which reloaded covers.
func (r *agentRunner) staleStart(ctx context.Context, err error, run *braidv1.NodeRun, in agent.Input, calls int64) bool {
	var ce *persistence.ConflictError
	if ctx.Err() != nil || in.IsResume() || run.GetRecover() || !errors.As(err, &ce) || r.modelCalls.Load() != calls {
		return false
	}
	s := r.sess.Load()
	return s != nil && ce.Key == s.Key()
}

// heldUnfinished reports whether err is an agent's refusal of a prompt
// because it holds an unfinished invocation (interrupted, or cut off),
// which changed nothing: not the refusal of the input an AfterInvocation
// hook resumed with, which comes after the invocation ran (the agent then
// holds this run's own invocation).
func heldUnfinished(err error) bool {
	return (errors.Is(err, interrupt.ErrResumeRequired) || errors.Is(err, agent.ErrIncompleteRun)) && !errors.Is(err, agent.ErrAutoResume)
}

// dropUnfinished drops the invocation the agent holds unfinished from a
// run that is over, and takes its history back to where that invocation
// began (run.unfinished_since), as a failed invocation is taken back
// (SPEC A3); where that is unknown (a run of an earlier build) the history
// is kept.
func (r *agentRunner) dropUnfinished(ctx context.Context, run *braidv1.NodeRun) error {
	snap, err := r.a.Snapshot(ctx)
	if err != nil {
		return err
	}
	keep := snap.Messages
	switch s := run.UnfinishedSince; {
	case s == nil: // unknown (a record of an earlier build): kept
	case *s < 0: // it began after a reset: the history as built
		keep = keep[:min(len(r.initial), len(keep))]
	case *s <= int64(len(keep)):
		keep = keep[:*s]
	}
	return r.a.SetMessages(ctx, keep, agent.DropUnfinished())
}

// deadHeld tells, for a prompt's run cut off by a crash that was given
// while the agent may have held an invocation of a dead run
// (run.unfinished_since is then set), whether the crash came before the
// runner dropped that invocation: the agent holds unfinished work, and
// its history does not hold the run's prompt where the dead invocation
// began. began is where the run's own invocation began when its prompt is
// there (-1: unknown, or after a reset). A dead invocation whose prompt is
// the same as the run's is taken for the run's: its answers carry it on.
func (r *agentRunner) deadHeld(ctx context.Context, run *braidv1.NodeRun, in agent.Input) (dead bool, began int64, err error) {
	s := run.GetUnfinishedSince()
	if run.UnfinishedSince == nil || in.IsResume() || len(in.Prompt()) == 0 {
		return false, -1, nil
	}
	st, err := r.a.Status(ctx)
	if err != nil {
		return false, -1, err
	}
	snap, err := r.a.Snapshot(ctx)
	if err != nil {
		return false, -1, err
	}
	at := int(s)
	if s < 0 {
		at = len(r.initial)
	}
	began = -1
	mine, err := promptAt(snap.Messages, at, in.Prompt())
	if err != nil {
		return false, -1, err
	}
	if mine && s >= 0 {
		began = s
	}
	if !mine && run.GetBase() != int64(at) {
		// The agent did not hold what the node's last run left (that run
		// failed and the agent took its prompt back, or only a hook after
		// it failed): the run's invocation began at base.
		if mine, err = promptAt(snap.Messages, int(run.GetBase()), in.Prompt()); err != nil {
			return false, -1, err
		}
	}
	return !mine && (st.Interrupted() || st.Incomplete()), began, nil
}

// promptAt reports whether history holds prompt from index at on.
func promptAt(history []model.Message, at int, prompt []model.Message) (bool, error) {
	if at < 0 || at+len(prompt) > len(history) {
		return false, nil
	}
	for i, m := range prompt {
		a, err := json.Marshal(history[at+i])
		if err != nil {
			return false, err
		}
		b, err := json.Marshal(m)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(a, b) {
			return false, nil
		}
	}
	return true, nil
}

// recover looks at where the agent stood when a crash cut its node's run
// off: interrupted (a resume: run it; else done: report it), finished (done: its last message is
// the result), begun (carry it on with the empty input), or not begun.
func (r *agentRunner) recover(ctx context.Context, base int64, resume bool) (done bool, res *braidv1.NodeResult, carry bool, err error) {
	st, err := r.a.Status(ctx)
	if err != nil {
		return false, nil, false, err
	}
	switch {
	case st.Interrupted() && resume:
		return false, nil, false, nil // the cut-off run was this resume: run it
	case st.Interrupted():
		return true, waiting(st), false, nil
	case st.Incomplete():
		return false, nil, true, nil
	case int64(st.Messages) <= base:
		return false, nil, false, nil
	}
	snap, err := r.a.Snapshot(ctx)
	if err != nil {
		return false, nil, false, err
	}
	last := snap.Messages[len(snap.Messages)-1]
	if last.Role == model.RoleAssistant && len(last.ToolUses()) == 0 {
		return true, agentResult(&agent.Result{StopReason: agent.StopEndTurn, Message: last}), false, nil
	}
	return false, nil, true, nil
}

// recoverReset is recover for a cut-off run that started with a reset:
// base is the length of the history before the reset, that of a finished
// run. The agent stands where the reset left it and the run has not begun
// (its history as built, or as before the reset: reset and run it), or
// the run has begun after the reset (interrupted, a tool cycle in flight,
// or a history that does not end with a final answer: carry it on), or it
// finished after the reset (a final answer in a history of another
// length than before the reset: done). A finished run is normally
// committed with its orchestrator's record, so the last case is rare;
// where its history has the same length as before the reset, the two
// cannot be told apart, and the run is taken as not begun.
func (r *agentRunner) recoverReset(ctx context.Context, base int64, _ bool) (done bool, res *braidv1.NodeResult, carry bool, err error) {
	st, err := r.a.Status(ctx)
	if err != nil {
		return false, nil, false, err
	}
	switch {
	case st.Interrupted():
		return true, waiting(st), false, nil
	case st.Incomplete():
		return false, nil, true, nil
	case st.Messages <= len(r.initial):
		return false, nil, false, nil
	}
	snap, err := r.a.Snapshot(ctx)
	if err != nil {
		return false, nil, false, err
	}
	last := snap.Messages[len(snap.Messages)-1]
	switch {
	case last.Role != model.RoleAssistant || len(last.ToolUses()) > 0:
		return false, nil, true, nil
	case int64(len(snap.Messages)) == base:
		return false, nil, false, nil
	}
	return true, agentResult(&agent.Result{StopReason: agent.StopEndTurn, Message: last}), false, nil
}

// waiting is the result of a run in which the agent, interrupted as st
// says, did not run: its interrupts and its history's length, which tells
// the orchestrator that it still holds the answers it was given
// (actors.NodeRunner).
func waiting(st agent.Status) *braidv1.NodeResult {
	return agentResult(&agent.Result{StopReason: agent.StopInterrupt, Interrupts: st.Interrupts, History: st.Messages})
}

func agentResult(res *agent.Result) *braidv1.NodeResult {
	w, err := agent.ResultToWire(res)
	if err != nil {
		// a message that does not encode: its error's text says it all
		return &braidv1.NodeResult{Status: braidv1.NodeStatus_NODE_STATUS_FAILED, Error: agent.ErrorToWire(err)}
	}
	out := &braidv1.NodeResult{Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED, Result: &braidv1.NodeResult_Agent{Agent: w}, Usage: w.GetUsage()}
	if res.Interrupted() {
		out.Status = braidv1.NodeStatus_NODE_STATUS_INTERRUPTED
		out.Interrupts = w.GetInterrupts()
	}
	return out
}

// Progress implements actors.NodeRunner: the agent's message count, with
// a session or without one. Without a session no run is recovered, but
// the orchestrator still says where a prompt's invocation began
// (NodeRun.unfinished_since), so that an invocation a dead run left
// unfinished is taken back to there and not to an empty history.
func (r *agentRunner) Progress(ctx context.Context) (int64, error) {
	if n := r.count.Swap(-1); n >= 0 {
		return n, nil // what the run just returned said: no ask
	}
	st, err := r.a.Status(ctx)
	if err != nil {
		return 0, err
	}
	return int64(st.Messages), nil
}

// Close implements actors.NodeRunner.
func (r *agentRunner) Close(ctx context.Context) error { return r.a.Close(ctx) }

// failed is the result of a run that failed with err; err itself goes to
// the orchestrator's in-process callers (actors.SetLocalError), its wire
// form to any other.
func failed(ctx context.Context, err error) *braidv1.NodeResult {
	actors.SetLocalError(ctx, err)
	return &braidv1.NodeResult{Status: braidv1.NodeStatus_NODE_STATUS_FAILED, Error: agent.ErrorToWire(err)}
}

// Func returns a node that runs fn, a plain Go function, with the node's
// input. Its output is the node's result content. A function node has no
// session state of its own: cut off by a crash, it runs again. A nil fn
// fails the build of the node's orchestrator with ErrConfig.
func Func(fn func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error)) actors.Node {
	return &funcNode{fn: fn}
}

type funcNode struct {
	fn func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error)
}

// NodeKind implements actors.KindedNode.
func (n *funcNode) NodeKind() actors.NodeKind { return actors.NodeKindFunc }

// OpenNode implements actors.Node.
func (n *funcNode) OpenNode(_ context.Context, env actors.NodeEnv) (actors.NodeRunner, error) {
	if n.fn == nil {
		return nil, fmt.Errorf("%w: node %q: Func was given a nil function", ErrConfig, env.NodeID)
	}
	return n, nil
}

// RunNode implements actors.NodeRunner.
func (n *funcNode) RunNode(ctx context.Context, run *braidv1.NodeRun) *braidv1.NodeResult {
	in, err := agent.InputFromWire(run.GetInput())
	if err != nil {
		return failed(ctx, err)
	}
	out, err := n.fn(ctx, in)
	if err != nil {
		return failed(ctx, err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return failed(ctx, err)
	}
	return &braidv1.NodeResult{Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED, Result: &braidv1.NodeResult_Content{Content: b}}
}

// Progress implements actors.NodeRunner.
func (n *funcNode) Progress(context.Context) (int64, error) { return 0, nil }

// Close implements actors.NodeRunner.
func (n *funcNode) Close(context.Context) error { return nil }
