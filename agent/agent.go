package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
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
	ErrIncompleteRun = errors.New("the last run was cut off in the middle (the process stopped): carry it on with an empty input before giving a new prompt")
	// ErrTooManyResumes: AfterInvocation hooks resumed more than MaxAutoResumes times.
	ErrTooManyResumes = errors.New("too many automatic resumes from AfterInvocation hooks")
)

// Agent is a handle to one agent actor: a model, tools, hooks and one session
// (history, key/value state, interrupt state). Invocations are processed one
// at a time. All methods are safe for concurrent use.
type Agent struct {
	cfg   Config
	tools map[string]tool.Tool
	specs []model.ToolSpec
	hooks *hook.Registry

	sys    *actors.System
	ownSys bool
	actor  *actors.Serial

	kv State

	// sess is the agent's writer in its session (nil without one).
	sess *persistence.AgentSession

	// The session. The running invocation owns interrupts and pending; mu
	// guards messages for readers outside the invocation.
	mu         sync.Mutex
	messages   []model.Message
	interrupts *interrupt.State
	pending    *Pending

	hookMu sync.Mutex // serialises hooks fired from concurrent tools

	runMu  sync.Mutex
	cancel context.CancelCauseFunc

	closeOnce sync.Once
	closeErr  error
}

// New builds an agent, restores Config.Restore if given, starts its actor
// and fires AgentInitializedEvent.
func New(cfg Config) (*Agent, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Agent{
		cfg:        cfg,
		tools:      make(map[string]tool.Tool, len(cfg.Tools)),
		hooks:      hook.NewRegistry(cfg.Hooks...),
		interrupts: interrupt.NewState(),
	}
	for _, t := range cfg.Tools {
		s := t.Spec()
		a.tools[s.Name] = t
		a.specs = append(a.specs, s)
	}
	restore := cfg.Restore
	if cfg.Session != nil {
		sess, rec, err := cfg.Session.OpenAgent(context.Background(), cfg.ID)
		if err != nil {
			return nil, fmt.Errorf("restore agent %q: %w", cfg.ID, err)
		}
		a.sess = sess
		if rec != nil {
			if restore, err = fromRecord(sess.Key(), rec); err != nil {
				return nil, fmt.Errorf("restore agent %q: %w", cfg.ID, err)
			}
		}
	}
	if s := restore; s != nil {
		a.messages = model.CloneMessages(s.Messages)
		a.kv.replace(s.State)
		if s.Interrupts != nil {
			a.interrupts.Restore(s.Interrupts)
		}
		a.pending = s.Pending.clone()
	} else {
		a.messages = model.CloneMessages(cfg.Messages)
	}
	a.sys = cfg.System
	if a.sys == nil {
		sys, err := actors.NewSystem(actors.Config{Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		a.sys, a.ownSys = sys, true
	}
	serial, err := actors.NewSerial(a.sys)
	if err != nil {
		if a.ownSys {
			_ = a.sys.Close(context.Background())
		}
		return nil, err
	}
	a.actor = serial
	if err := hook.Run(context.Background(), a.hooks, &AgentInitializedEvent{Agent: a}); err != nil {
		_ = a.Close(context.Background())
		return nil, fmt.Errorf("AgentInitialized hook: %w", err)
	}
	return a, nil
}

// ID returns the agent id.
func (a *Agent) ID() string { return a.cfg.ID }

// Name returns the display name.
func (a *Agent) Name() string { return a.cfg.Name }

// State returns the agent's key/value store.
func (a *Agent) State() *State { return &a.kv }

// Tools returns the specs of the agent's tools.
func (a *Agent) Tools() []model.ToolSpec { return append([]model.ToolSpec(nil), a.specs...) }

// Hooks returns the registry, for adding callbacks after New.
func (a *Agent) Hooks() *hook.Registry { return a.hooks }

// Messages returns a copy of the history.
func (a *Agent) Messages() []model.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return model.CloneMessages(a.messages)
}

// Interrupted reports whether the agent waits for interrupt responses.
func (a *Agent) Interrupted() bool { return len(a.Interrupts()) > 0 }

// Interrupts returns the unanswered interrupts the agent waits for.
func (a *Agent) Interrupts() []interrupt.Interrupt {
	if !a.interrupts.Activated() {
		return nil
	}
	return a.interrupts.Unanswered()
}

// Incomplete reports whether the agent holds work that was cut off (its
// process was killed in a tool cycle, or during a resume whose answers were
// all saved) and waits for nothing: Invoke it with the empty Input to carry
// on. A prompt is refused until then (ErrIncompleteRun).
func (a *Agent) Incomplete() bool {
	a.mu.Lock()
	p := a.pending
	a.mu.Unlock()
	return p != nil && !a.Interrupted()
}

// setPending replaces the pending work; readers outside the invocation
// take a.mu.
func (a *Agent) setPending(p *Pending) {
	a.mu.Lock()
	a.pending = p
	a.mu.Unlock()
}

// Snapshot returns the agent's session as of the end of the last
// invocation. It waits for the running invocation, if any, to finish.
func (a *Agent) Snapshot(ctx context.Context) (*Snapshot, error) {
	var s *Snapshot
	err := a.do(ctx, func(context.Context) { s = a.snapshot() })
	return s, err
}

func (a *Agent) pendingCopy() *Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending.clone()
}

func (a *Agent) snapshot() *Snapshot {
	a.mu.Lock()
	msgs := model.CloneMessages(a.messages)
	a.mu.Unlock()
	if msgs == nil {
		msgs = []model.Message{}
	}
	return &Snapshot{
		Version:    SnapshotVersion,
		AgentID:    a.cfg.ID,
		Messages:   msgs,
		State:      a.kv.All(),
		Interrupts: a.interrupts.Clone(),
		Pending:    a.pendingCopy(),
	}
}

// ErrInterruptedReset: SetMessages while the agent waits for interrupt responses.
var ErrInterruptedReset = errors.New("cannot replace the history while the agent is interrupted: resume it first")

// SetMessages replaces the history (a conversation manager's job: trim,
// summarise, start over). It runs after the current invocation and is
// refused while the agent is interrupted. With a Session, the new history is
// saved (durably) before it returns.
func (a *Agent) SetMessages(ctx context.Context, msgs []model.Message) error {
	var err error
	if derr := a.do(ctx, func(ctx context.Context) {
		if a.interrupts.Activated() {
			err = ErrInterruptedReset
			return
		}
		a.mu.Lock()
		a.messages = model.CloneMessages(msgs)
		a.mu.Unlock()
		err = a.saveFrom(ctx, persistence.SaveInvocation, 0)
	}); derr != nil {
		return derr
	}
	return err
}

// InvokeOption tweaks one invocation.
type InvokeOption func(*invokeOptions)

type invokeOptions struct {
	values map[string]any
}

// WithValues passes per-invocation values to tools (tool.Context.Invocation).
func WithValues(values map[string]any) InvokeOption {
	return func(o *invokeOptions) { o.values = values }
}

// Invoke runs one invocation and returns its result. With a prompt it
// appends the prompt and runs the loop; with Resume(...) it answers the
// pending interrupts and carries on where the agent stopped. Input is
// validated before anything changes (SPEC I7).
//
// A cancelled ctx aborts the invocation with ctx's error; the interrupt
// state it had is kept, so it can still be resumed.
func (a *Agent) Invoke(ctx context.Context, in Input, opts ...InvokeOption) (*Result, error) {
	var res *Result
	var err error
	if derr := a.do(ctx, func(ctx context.Context) { res, err = a.invoke(ctx, in, opts, nil) }); derr != nil {
		return nil, derr
	}
	return res, err
}

// Stream runs one invocation like Invoke and yields its events as they
// happen; the last one is a *ResultEvent. An error ends the sequence.
// Breaking out of the loop cancels the invocation and waits for it to stop;
// interrupt events are only sent once the interrupt state is activated and
// saved, so stopping there loses nothing (SPEC I9).
func (a *Agent) Stream(ctx context.Context, in Input, opts ...InvokeOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events := make(chan Event, 64)
		emit := func(ev Event) bool {
			select {
			case events <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		type outcome struct {
			res *Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			var o outcome
			if err := a.do(ctx, func(ctx context.Context) { o.res, o.err = a.invoke(ctx, in, opts, emit) }); err != nil {
				o.err = err
			}
			done <- o
		}()
		for {
			select {
			case ev := <-events:
				if !yield(ev, nil) {
					cancel()
					<-done
					return
				}
			case o := <-done:
				for {
					select {
					case ev := <-events:
						if !yield(ev, nil) {
							return
						}
						continue
					default:
					}
					break
				}
				if o.err != nil {
					yield(nil, o.err)
					return
				}
				yield(&ResultEvent{Result: o.res}, nil)
				return
			}
		}
	}
}

// Cancel stops the running invocation, if any: it ends with stop reason
// cancelled at the next safe point (before the model call, before the tools,
// or after them; a model stream in progress is aborted). The history stays
// valid. It returns whether an invocation was running.
func (a *Agent) Cancel() bool {
	a.runMu.Lock()
	defer a.runMu.Unlock()
	if a.cancel == nil {
		return false
	}
	a.cancel(ErrCancelled)
	return true
}

// CallTool runs one of the agent's tools directly, outside the loop; nothing
// is added to the history. Direct calls cannot interrupt (SPEC A12): a tool
// that tries gets ErrDirectInterrupt, and so does the caller. It is refused
// while the agent is interrupted.
func (a *Agent) CallTool(ctx context.Context, name string, input any) (model.ToolResult, error) {
	t, ok := a.tools[name]
	if !ok {
		return model.ToolResult{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	if a.interrupts.Activated() {
		return model.ToolResult{}, ErrInterruptedDirect
	}
	raw, err := json.Marshal(input)
	if rm, ok := input.(json.RawMessage); ok {
		raw, err = rm, nil
	}
	if err != nil {
		return model.ToolResult{}, fmt.Errorf("tool %q: input is not JSON-encodable: %w", name, err)
	}
	tu := model.ToolUse{ToolUseID: "direct-" + name, Name: name, Input: raw}
	tc := tool.NewContext(tu, nil, &a.kv, nil)
	content, err := tool.Invoke(ctx, t, tc, raw)
	if errors.Is(err, interrupt.ErrNotInterruptible) {
		return model.ToolResult{}, fmt.Errorf("tool %q: %w", name, ErrDirectInterrupt)
	}
	if err != nil {
		return model.ErrorResult(tu.ToolUseID, err.Error()), nil
	}
	return model.ToolResult{ToolUseID: tu.ToolUseID, Status: model.ToolSuccess, Content: content}, nil
}

// Close cancels the running invocation, rejects queued ones with ErrClosed,
// waits for the actor to stop, and stops the actor system if the agent
// started it. Closing twice is a no-op.
func (a *Agent) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		a.runMu.Lock()
		if a.cancel != nil {
			a.cancel(ErrClosed)
		}
		a.runMu.Unlock()
		err := a.actor.Close(ctx)
		if a.ownSys {
			if e := a.sys.Close(ctx); e != nil && err == nil {
				err = e
			}
		}
		a.closeErr = err
	})
	return a.closeErr
}

// do runs fn as one job of the agent's actor (see actors.Serial.Do).
func (a *Agent) do(ctx context.Context, fn func(ctx context.Context)) error {
	err := a.actor.Do(ctx, fn)
	if errors.Is(err, actors.ErrClosed) {
		return ErrClosed
	}
	return err
}
