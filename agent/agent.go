package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/proto/braidv1"
)

// Errors of the agent handle.
var (
	// ErrClosed: the agent was closed.
	ErrClosed = errors.New("agent closed")
	// ErrCancelled is the cause given to an invocation stopped by Cancel.
	ErrCancelled = errors.New("invocation cancelled")
	// ErrDirectInterrupt: a tool called directly (CallTool) raised an interrupt.
	ErrDirectInterrupt = errors.New("interrupts are not supported in direct tool calls")
	// ErrInterruptedDirect: CallTool while the agent waits for interrupt responses.
	ErrInterruptedDirect = errors.New("cannot call a tool directly while the agent is interrupted: resume it first")
	// ErrUnknownTool: CallTool named a tool the agent does not have.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrEmptyInput: an empty input with an empty history; there is nothing to answer.
	ErrEmptyInput = errors.New("empty input and empty history: give a prompt")
	// ErrIncompleteRun: a prompt while the agent holds a cut-off run.
	ErrIncompleteRun = errors.New("the last run did not finish (its process stopped or a Close cut it off, or its model call failed after its tools ran): carry it on with an empty input before giving a new prompt")
	// ErrTooManyResumes: AfterInvocation hooks resumed more than MaxAutoResumes times.
	ErrTooManyResumes = errors.New("too many automatic resumes from AfterInvocation hooks")
	// ErrAutoResume wraps the refusal (SPEC I7) of the input an
	// AfterInvocation hook resumed with: the invocation had run, unlike a
	// refusal of the input Invoke was given, which changes nothing.
	ErrAutoResume = errors.New("the input an AfterInvocation hook resumed with was refused")
	// ErrReentrant: a hook or tool of an agent asked that same agent for
	// work (Invoke, Stream, SetMessages, SetState, CallTool) with the
	// context it was given, directly or through another agent it waits
	// on (a tool that invokes an agent whose tool calls back); the work
	// would wait for the invocation that waits for it (SPEC R7). Read the agent through ev.Agent (or
	// Snapshot and Status, which are answered at once), or have an
	// AfterInvocation hook call Resume. An AgentInitialized hook gets it
	// for every call of its agent (Status, Snapshot and Cancel, Close
	// too): the actor answers nothing until its activation, which waits
	// for the hook, has ended.
	ErrReentrant = errors.New("an agent's own hook or tool cannot give it more work while it runs: read it through ev.Agent, or resume from AfterInvocation")
)

// KindAgent is the actor kind of agents in the registry (SPEC R4).
const KindAgent = "agent"

// Agent is a client handle to one agent actor (SPEC R1): the actor owns the
// agent's session (history, key/value state, interrupt state, pending
// work) and runs its invocations one at a time; the handle sends it
// messages and waits for the replies with the caller's context (SPEC R5).
// It holds no session state. All methods are safe for concurrent use.
type Agent struct {
	core    *core
	sys     *actors.System
	binding *actors.Binding
	closed  atomic.Bool
	closing actors.Closing
	// spare is the reply channel of the last call that lent its goroutine
	// (a context that cannot end), for the next one: such a call reads
	// both values its channel gets, so the channel is empty again and
	// nothing late can reach it.
	spareMu sync.Mutex
	spare   chan *job
}

// New builds an agent: it binds the agent's identity in its System's
// registry and activates its actor, which restores the session
// (Config.Session or Config.Restore) and fires AgentInitializedEvent. ctx
// bounds the wait for that; the actor loads within Config.LoadTimeout.
// If ctx ends first, New returns its error at once; a load that still
// waits for its store keeps the identity bound until it ends (a New of
// the same identity meanwhile is actors.ErrBound), then releases it.
//
// With a Session the identity is (session id, "agent", owner path + id),
// and a second agent of the same identity in one System is refused with
// actors.ErrBound until the first is closed. Without one, every agent is
// an identity of its own.
func New(ctx context.Context, cfg Config) (*Agent, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hooks := hook.NewRegistry(cfg.Hooks...)
	if err := checkHooks(hooks); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c := &core{cfg: cfg, tools: newTools(cfg.Tools), hooks: hooks, now: time.Now}
	sys := cfg.System
	if sys == nil {
		var err error
		if sys, err = actors.Default(); err != nil {
			return nil, err
		}
	}
	id := actors.Identity{Kind: KindAgent, Path: interrupt.OwnedID(cfg.OwnerPath, cfg.ID)}
	idle := cfg.IdleTimeout
	if cfg.Session != nil {
		id.SessionID = cfg.Session.SessionID()
	} else {
		id.Path += "#" + sys.UniqueID() // no session: an identity of its own
	}
	activations := 0
	producer := func() actor.Actor {
		activations++ // the registry's goroutine only
		return &agentActor{core: c, sys: sys, first: activations == 1}
	}
	// Without a session and AgentInitialized hooks, the start loads
	// nothing and runs no user code.
	quick := cfg.Session == nil && !hook.Has[AgentInitializedEvent](c.hooks)
	b, err := sys.Registry().Bind(ctx, id, actors.BindConfig{Producer: producer, IdleTimeout: idle, QuickStart: quick})
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", cfg.ID, err)
	}
	a := &Agent{core: c, sys: sys, binding: b}
	if _, err := a.ask(ctx, &braidv1.AgentStatusRequest{}); err != nil {
		// Asked for, and waited for only while ctx lasts: an activation
		// whose load still waits for its store holds the identity until
		// the load ends (SPEC R5).
		_ = b.Unbind(ctx)
		return nil, err
	}
	return a, nil
}

// ID returns the agent id.
func (a *Agent) ID() string { return a.core.cfg.ID }

// Name returns the display name.
func (a *Agent) Name() string { return a.core.cfg.Name }

// Tools returns the specs of the agent's tools.
func (a *Agent) Tools() []model.ToolSpec { return slices.Clone(a.core.tools.specs) }

// Hooks returns the registry, for adding callbacks after New; they run
// from the next invocation on. A callback for an event the agent never
// fires (an orchestrator's) makes every later invocation fail with
// hook.ErrNotFired, as it would have failed New, rather than never run.
func (a *Agent) Hooks() *hook.Registry { return a.core.hooks }

// checkHooks refuses a registry with callbacks for events an agent never
// fires (hook.ErrNotFired).
func checkHooks(r *hook.Registry) error {
	return r.Check("agent", "an orchestrator's events go to graph.Config.Hooks or swarm.Config.Hooks", events()...)
}

// Binding returns the agent's claim on its identity, for code that
// addresses the agent's actor by message (orchestrators, the cluster
// layer, tests): the protocol is proto/braidv1/agent.proto.
func (a *Agent) Binding() *actors.Binding { return a.binding }

// Status is what an agent's actor is doing.
type Status struct {
	// State is idle, running, interrupted or incomplete.
	State Activity
	// Interrupts are the unanswered interrupts while interrupted.
	Interrupts []interrupt.Interrupt
	// Queued counts invocations waiting behind the running one.
	Queued int
	// Messages counts the messages of the committed history.
	Messages int
}

// Activity is what an agent is doing (Status.State).
type Activity string

// Activities.
const (
	// ActivityIdle: nothing runs or waits.
	ActivityIdle Activity = "IDLE"
	// ActivityRunning: an invocation (or a direct tool call, a history
	// reset) runs.
	ActivityRunning Activity = "RUNNING"
	// ActivityInterrupted: it waits for answers to its interrupts.
	ActivityInterrupted Activity = "INTERRUPTED"
	// ActivityIncomplete: it holds work a crash cut off (see Incomplete).
	ActivityIncomplete Activity = "INCOMPLETE"
)

// activityFromWire converts the protobuf state; an unknown one is idle.
func activityFromWire(s braidv1.AgentState) Activity {
	switch s {
	case braidv1.AgentState_AGENT_STATE_RUNNING:
		return ActivityRunning
	case braidv1.AgentState_AGENT_STATE_INTERRUPTED:
		return ActivityInterrupted
	case braidv1.AgentState_AGENT_STATE_INCOMPLETE:
		return ActivityIncomplete
	}
	return ActivityIdle
}

// Interrupted reports whether the agent waits for interrupt responses.
func (s Status) Interrupted() bool { return s.State == ActivityInterrupted }

// Incomplete reports whether the agent holds work that was cut off (its
// process was killed, or an agent on its session closed, in a tool cycle,
// or during a resume whose answers were all saved), or a history whose
// last message the model has not answered (a prompt or tool results: the
// model call was cut off, or failed after the tools ran), and waits for
// nothing: Invoke it with the empty Input to carry on. A prompt is
// refused until then (ErrIncompleteRun): it would make two user messages
// in a row.
func (s Status) Incomplete() bool { return s.State == ActivityIncomplete }

// Status asks the actor what it is doing; it answers at once, even while
// an invocation runs.
func (a *Agent) Status(ctx context.Context) (Status, error) {
	rep, err := a.ask(ctx, &braidv1.AgentStatusRequest{})
	if err != nil {
		return Status{}, err
	}
	w, ok := rep.(*braidv1.AgentStatus)
	if !ok {
		return Status{}, fmt.Errorf("agent %q: unexpected reply %T", a.ID(), rep)
	}
	s := Status{State: activityFromWire(w.GetState()), Queued: int(w.GetQueued()), Messages: int(w.GetMessages())}
	for _, iw := range w.GetInterrupts() {
		in, err := actors.InterruptFromWire(iw)
		if err != nil {
			return Status{}, err
		}
		s.Interrupts = append(s.Interrupts, in)
	}
	return s, nil
}

// Snapshot returns the agent's session as of its last save point (without
// a session: as of the end of its last invocation). It is answered at
// once, even while an invocation runs.
func (a *Agent) Snapshot(ctx context.Context) (*Snapshot, error) {
	rep, err := a.ask(ctx, &braidv1.AgentSnapshotRequest{})
	if err != nil {
		return nil, err
	}
	w, ok := rep.(*braidv1.AgentSnapshot)
	if !ok {
		return nil, fmt.Errorf("agent %q: unexpected reply %T", a.ID(), rep)
	}
	var s Snapshot
	if err := json.Unmarshal(w.GetSnapshot(), &s); err != nil {
		return nil, fmt.Errorf("agent %q: snapshot: %w", a.ID(), err)
	}
	return &s, nil
}

// SetMessages replaces the history (a conversation manager's job: trim,
// summarise, start over). It runs after the invocations asked for before
// it and is refused while the agent is interrupted (ErrInterruptedReset),
// unless given DropUnfinished. With a Session, the new history is saved
// (durably) before it returns. A history that ends with a user message
// waits for the model's answer: the agent is then Incomplete, and the
// next Invoke takes the empty Input (a prompt is ErrIncompleteRun).
func (a *Agent) SetMessages(ctx context.Context, msgs []model.Message, opts ...SetMessagesOption) error {
	var o setMessagesOptions
	for _, f := range opts {
		f(&o)
	}
	r := &request{kind: reqSetMessages, msgs: model.CloneMessages(msgs), del: o.drop}
	_, err := a.run(ctx, r, nil)
	return err
}

// SetMessagesOption tweaks one SetMessages call.
type SetMessagesOption func(*setMessagesOptions)

type setMessagesOptions struct{ drop bool }

// DropUnfinished makes SetMessages drop, in the same save, the invocation
// the agent holds unfinished: interrupted (its interrupts are dropped
// unanswered and can no longer be resumed) or cut off by a crash (its
// pending tool cycle is dropped, its tools are not carried on). It is for
// an owner whose run that invocation belonged to is over: a Graph or
// Swarm node whose run ended without it gives the node's agent back the
// history it had before that invocation, as a failed invocation is taken
// back (SPEC A3), before the node's next run.
func DropUnfinished() SetMessagesOption {
	return func(o *setMessagesOptions) { o.drop = true }
}

// SetState stores value (JSON-encodable) under key in the agent's
// key/value state (SPEC A11). It runs after the invocations asked for
// before it and, with a Session, is saved before it returns. Hooks and
// tools change the state through ev.Agent.State() and tc.State.
func (a *Agent) SetState(ctx context.Context, key string, value any) error {
	raw, ok := value.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("%w: agent state %q: value is not JSON-encodable: %v", ErrBadInput, key, err)
		}
		raw = b
	}
	if key == "" {
		return fmt.Errorf("%w: agent state: empty key", ErrBadInput)
	}
	_, err := a.run(ctx, &request{kind: reqSetState, tool: key, input: raw}, nil)
	return err
}

// DeleteState removes key from the agent's key/value state, like SetState.
func (a *Agent) DeleteState(ctx context.Context, key string) error {
	_, err := a.run(ctx, &request{kind: reqSetState, tool: key, del: true}, nil)
	return err
}

// InvokeOption tweaks one invocation.
type InvokeOption func(*invokeOptions)

type invokeOptions struct {
	values map[string]any
}

// WithValues passes per-invocation values to tools (tool.Context.Invocation).
// Each value must be JSON-encodable (SPEC R2: an invocation can come from
// another process); tools see it as decoded JSON (numbers as float64).
func WithValues(values map[string]any) InvokeOption {
	return func(o *invokeOptions) { o.values = values }
}

// Invoke runs one invocation and returns its result. With a prompt it
// appends the prompt and runs the loop; with Resume(...) it answers the
// pending interrupts and carries on where the agent stopped. Input is
// validated before anything changes (SPEC I7). With a session, an input
// refused for the interrupt state (interrupt.ErrNotInterrupted,
// ErrUnknownID, ErrResumeRequired) is first checked against the store: if
// another writer (another process) saved the agent since it read it, the
// call fails with persistence.ErrConflict instead (a
// *persistence.ConflictError), and the agent takes the stored state, so
// the next call goes on from it (SPEC S4). A stored run whose resume
// another writer claimed (its interrupts all answered, it waits for no
// answer) refuses another answer to those interrupts with an
// *interrupt.IDError matching interrupt.ErrNotInterrupted: the run is
// that writer's, which may be running it still. Only this agent's own
// answers may be given again (a later save of its run failed); a run a
// crash cut off is carried on with the empty Input.
//
// If ctx ends first, Invoke returns ctx's error at once and the actor
// stops the invocation at its next safe point, failing it with that
// error (a fresh one's prompt is taken back); the interrupt state it had
// is kept, so it can still be resumed. With a context that cannot end
// (context.Background()), the invocation's loop runs on the caller's
// goroutine, lent to the agent's actor for it (see docs/DESIGN.md, Jobs):
// the same behaviour, without two goroutine hand-offs.
//
// The values of ctx (a trace, a request id) reach the invocation's hooks,
// model calls and tools through their contexts; its deadline and
// cancellation reach them only as described above. Values do not cross a
// process; a Graph or Swarm in this process passes its caller's on to its
// hooks and nodes the same way.
func (a *Agent) Invoke(ctx context.Context, in Input, opts ...InvokeOption) (*Result, error) {
	r, err := a.invocation(in, opts)
	if err != nil {
		return nil, err
	}
	res, err := a.run(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	return res.(*Result), nil
}

// invokeToEnd is Invoke, except that when ctx ends it returns only once
// the invocation has stopped (or the agent can answer no more): a call of
// an agent used as a tool ends with the agent's run, as a call of any
// tool ends with the tool (AsTool).
func (a *Agent) invokeToEnd(ctx context.Context, in Input) (*Result, error) {
	r, err := a.invocation(in, nil)
	if err != nil {
		return nil, err
	}
	r.toEnd = true
	res, err := a.run(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	return res.(*Result), nil
}

// Stream runs one invocation like Invoke and yields its events as they
// happen; the last one is a *ResultEvent. An error ends the sequence.
// Breaking out of the loop cancels the invocation and waits for it to stop;
// interrupt events are only sent once the interrupt state is activated and
// saved, so stopping there loses nothing (SPEC I9). Once ctx ends, the
// sequence yields nothing more (not even events or a result already
// there) but ctx's error, and the invocation is stopped as Invoke's is; a
// ctx that has ended already sends nothing.
func (a *Agent) Stream(ctx context.Context, in Input, opts ...InvokeOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		r, err := a.invocation(in, opts)
		if err == nil && runsFor(ctx, a.core) {
			err = ErrReentrant
		}
		if err == nil {
			err = ctx.Err() // not sent: the caller is gone already
		}
		if err != nil {
			yield(nil, err)
			return
		}
		reply := &r.local
		reply.init(true)
		r.reply, r.caller = reply, ctx
		if err := a.send(r); err != nil {
			yield(nil, err)
			return
		}
		released := a.binding.Released()
		for {
			if ctx.Err() != nil {
				// A select would pick at random among an event, the
				// outcome and ctx's end when all are there: a caller
				// who left gets nothing more (SPEC R5).
				a.abandon(r, reply, abandonCause(ctx))
				yield(nil, ctx.Err())
				return
			}
			select {
			case ev := <-reply.events:
				if !yield(ev, nil) {
					a.abandon(r, reply, context.Canceled)
					select { // the invocation stops before Stream returns
					case <-reply.signal:
					case <-ctx.Done():
					}
					return
				}
			case <-reply.signal:
				for {
					select {
					case ev := <-reply.events:
						if ctx.Err() != nil {
							yield(nil, ctx.Err())
							return
						}
						if !yield(ev, nil) {
							return
						}
						continue
					default:
					}
					break
				}
				if ctx.Err() != nil {
					yield(nil, ctx.Err())
					return
				}
				if reply.err != nil {
					yield(nil, reply.err)
					return
				}
				yield(&ResultEvent{Result: reply.res.(*Result)}, nil)
				return
			case <-ctx.Done():
				a.abandon(r, reply, abandonCause(ctx))
				yield(nil, ctx.Err())
				return
			case <-a.sys.Done():
				close(reply.abandon) // a job still emitting must not block
				yield(nil, a.closedErr())
				return
			case <-released:
				released = nil
				if reply.taken.Load() {
					continue // the actor has it: its outcome comes
				}
				close(reply.abandon)
				yield(nil, a.closedErr())
				return
			}
		}
	}
}

// invocation turns an input and options into a request.
func (a *Agent) invocation(in Input, opts []InvokeOption) (*request, error) {
	var o invokeOptions
	for _, f := range opts {
		f(&o)
	}
	r := &request{kind: reqInvoke, in: in}
	if len(o.values) > 0 {
		r.values = make(map[string]json.RawMessage, len(o.values))
		for k, v := range o.values {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("%w: invocation value %q is not JSON-encodable: %v", ErrBadInput, k, err)
			}
			r.values[k] = b
		}
	}
	return r, nil
}

// run sends a job request and waits for its outcome or for ctx to end.
func (a *Agent) run(ctx context.Context, r *request, _ any) (any, error) {
	if runsFor(ctx, a.core) {
		return nil, ErrReentrant
	}
	if err := ctx.Err(); err != nil {
		return nil, err // not sent: the caller is gone already
	}
	// A context that cannot end (no Done channel) means nothing can end
	// this wait before the outcome: the job may run on this goroutine
	// (no hand-off to a pool goroutine and back).
	reply := &r.local
	if ctx.Done() == nil {
		reply.lends = true
		a.spareMu.Lock()
		reply.signal, a.spare = a.spare, nil
		a.spareMu.Unlock()
	}
	reply.init(false)
	r.reply, r.caller = reply, ctx
	if err := a.send(r); err != nil {
		return nil, err
	}
	select {
	case j := <-reply.signal:
		if j != nil {
			j.execute()
			select { // the actor's answer, once it has the job's end
			case <-reply.signal:
			case <-a.sys.Done():
				if !awaited(reply) {
					return nil, a.closedErr()
				}
			case <-a.binding.Released():
				if !awaited(reply) {
					return nil, a.closedErr()
				}
			}
		}
		if reply.lends {
			a.spareMu.Lock()
			a.spare = reply.signal
			a.spareMu.Unlock()
		}
		return reply.res, reply.err
	case <-ctx.Done():
		a.abandon(r, reply, abandonCause(ctx))
		if r.toEnd {
			// The abandon drops r if queued, or stops it if it runs;
			// either way its outcome comes, unless the agent can
			// answer no more.
			select {
			case <-reply.signal:
			case <-a.sys.Done():
			case <-a.binding.Released():
			}
		}
		return nil, ctx.Err()
	case <-a.sys.Done():
		return a.unanswered(reply)
	case <-a.binding.Released():
		return a.unanswered(reply)
	}
}

// unanswered ends a call whose agent can answer no more: its System
// closed, or its identity was released (by another caller's Close; a
// System's Close releases it too). A request the actor received is
// answered all the same (the actor or its job finishes it), so the call
// waits for that, unless the System closed; an outcome already there
// wins; a job handed over now is not run (the actor cancelled it).
func (a *Agent) unanswered(reply *localReply) (any, error) {
	if reply.taken.Load() {
		select {
		case j := <-reply.signal:
			if j == nil {
				return reply.res, reply.err
			}
			j.run.end.end() // left unrun: the actor cancelled it
			return nil, a.closedErr()
		case <-a.sys.Done():
		}
	}
	if outcome(reply) {
		return reply.res, reply.err
	}
	return nil, a.closedErr()
}

// closedErr is the error of a call whose agent's identity was released:
// actors.ErrClosed if its System closed (which released it), else
// ErrClosed, wrapping the *actors.FaultError of an actor that panicked
// while starting.
func (a *Agent) closedErr() error {
	select {
	case <-a.sys.Done():
		return actors.ErrClosed
	default:
	}
	if fe := (*actors.FaultError)(nil); errors.As(a.binding.Err(), &fe) {
		return fmt.Errorf("%w: %w", ErrClosed, fe)
	}
	return ErrClosed
}

// outcome reports whether reply holds its outcome already (a job handed
// over is not: it is left unrun, and ends so).
func outcome(reply *localReply) bool {
	select {
	case j := <-reply.signal:
		if j != nil {
			j.run.end.end()
		}
		return j == nil
	default:
		return false
	}
}

// awaited reports whether the outcome of a job this caller ran is there.
func awaited(reply *localReply) bool {
	select {
	case <-reply.signal:
		return true
	default:
		return false
	}
}

func (a *Agent) send(r *request) error {
	if a.closed.Load() {
		return ErrClosed
	}
	select {
	case <-a.sys.Done():
		return actors.ErrClosed
	default:
	}
	a.binding.Send(r)
	return nil
}

// activationErr refuses a call of the agent's own AgentInitialized hook:
// the actor answers once its activation, which waits for the hook, ends.
func (a *Agent) activationErr() error {
	return fmt.Errorf("%w: agent %q is being activated (an AgentInitialized hook called it): read it through ev.Agent", ErrReentrant, a.ID())
}

// abandonCause is why the caller whose context is ctx stopped waiting:
// its context's error, or actors.ErrCutOff when the caller is a node run
// whose orchestrator closed or stopped: the invocation is then cut off,
// as by a Close, not abandoned (see closedCut).
func abandonCause(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, actors.ErrCutOff) {
		return cause
	}
	return ctx.Err()
}

// abandon tells the actor that the caller of r stopped waiting: r is
// dropped if queued, or stopped with cause if it runs.
func (a *Agent) abandon(r *request, reply *localReply, cause error) {
	if reply.abandon != nil {
		close(reply.abandon)
	}
	a.binding.Send(&localAbandon{req: r, cause: cause})
}

// Cancel stops the running invocation, if any: it ends with stop reason
// cancelled at the next safe point (before the model call, before the
// tools, or after them; a model stream in progress is aborted). The
// history stays valid: one the cancel left ending with a user message
// (the prompt, or the tool results, the model had not answered) gets the
// assistant message DefaultCancelledTurn, so the run is over and the next
// prompt is taken (a history that ends with a user message is an
// incomplete run, SPEC A3). It reports whether an invocation was running.
func (a *Agent) Cancel(ctx context.Context) (bool, error) {
	rep, err := a.ask(ctx, &braidv1.AgentCancel{})
	if err != nil {
		return false, err
	}
	w, ok := rep.(*braidv1.AgentCancelled)
	if !ok {
		return false, fmt.Errorf("agent %q: unexpected reply %T", a.ID(), rep)
	}
	return w.GetWasRunning(), nil
}

// CallTool runs one of the agent's tools directly, outside the loop; nothing
// is added to the history. Direct calls cannot interrupt (SPEC A12): a tool
// that tries gets ErrDirectInterrupt, and so does the caller. It is refused
// while the agent is interrupted, and runs after the invocations asked for
// before it.
func (a *Agent) CallTool(ctx context.Context, name string, input any) (model.ToolResult, error) {
	if _, ok := a.core.tools.get(name); !ok {
		return model.ToolResult{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	raw, err := json.Marshal(input)
	if rm, ok := input.(json.RawMessage); ok {
		raw, err = rm, nil
	}
	if err != nil {
		return model.ToolResult{}, fmt.Errorf("tool %q: input is not JSON-encodable: %w", name, err)
	}
	res, err := a.run(ctx, &request{kind: reqCallTool, tool: name, input: raw}, nil)
	if err != nil {
		return model.ToolResult{}, err
	}
	return res.(model.ToolResult), nil
}

// Close cancels the running invocation, rejects queued ones with
// ErrClosed, and releases the agent's identity (stopping its actor) once
// the invocation has stopped: a tool that does not watch its context
// holds the identity until it returns, and its result is saved, so that
// no other agent of this session runs beside it in this System. An
// invocation Close cuts off is cut off as by a crash (SPEC S6): a tool
// that returns an error once its context ended has no result recorded,
// and an invocation that got further than its prompt is not taken back
// but left incomplete (Status.Incomplete), so that, carried on with the
// empty Input (by another agent on the session, in this process or
// another), it does not run its finished tools again, runs the cut-off
// tool again, or asks first if that one runs at most once. One Close cut
// off before anything but its prompt was saved is taken back (SPEC A3). Close
// waits for all that, or for ctx to end: it then returns ctx's error at
// once (SPEC R3, R5), and the close goes on without the caller. Every
// call after the first waits for the same close and returns its outcome;
// calls other than Close return ErrClosed from the first on. An
// activation under way (the session's load, AgentInitialized hooks) has
// its context ended by Close, which waits for it to return.
func (a *Agent) Close(ctx context.Context) error {
	if activating(ctx, a.core) {
		return a.activationErr()
	}
	a.closed.Store(true)
	return a.closing.Do(ctx, a.shutdown)
}

// shutdown is Close's work, run to its end whatever the callers' contexts
// do: each of its waits ends at the latest when the System closes, which
// stops the actor and releases the identity itself.
func (a *Agent) shutdown() error {
	a.core.activation.close() // an activation under way stops waiting
	ctx := context.Background()
	live, err := a.binding.Live(ctx)
	if err == nil && live {
		_, err = a.binding.Ask(ctx, &braidv1.AgentClose{})
	}
	if errors.Is(err, actors.ErrClosed) {
		err = nil // the System's Close stopped the actor and released it
	}
	if e := a.binding.Unbind(ctx); err == nil {
		err = e
	}
	return err
}

// ask sends a query or control message and waits for its one reply; an
// Error reply is returned as the error it carries.
func (a *Agent) ask(ctx context.Context, msg any) (any, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	if activating(ctx, a.core) {
		return nil, a.activationErr()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, err := a.binding.Ask(ctx, msg)
	if errors.Is(err, actors.ErrUnbound) {
		// The identity was released while the call was on its way (a
		// Close racing it): the agent is closed, as Invoke reports it.
		return nil, a.closedErr()
	}
	if err != nil {
		return nil, err
	}
	if w, ok := rep.(*braidv1.Error); ok {
		return nil, ErrorFromWire(w)
	}
	return rep, nil
}
