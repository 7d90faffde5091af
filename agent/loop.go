package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

// Default messages of SPEC A8 and the other early stops.
const (
	DefaultCancelTool    = "tool cancelled by user"
	DefaultCancelTools   = "Tool cancelled by hook"
	DefaultCancelled     = "Tool execution cancelled"
	DefaultCancelModel   = "model call cancelled by hook"
	DefaultCancelledTurn = "Cancelled by user"
	DefaultEndTurn       = "Turn ended early by hook after tool execution"
	unknownToolResultFmt = "Unknown tool: %s"
)

// invocation is the state of one Invoke (auto-resumes included).
type invocation struct {
	a      *job
	values map[string]any
	emit   func(Event) bool
	usage  model.Usage

	// fresh: the pass began with no interrupt state and no pending work
	// (a prompt, not a resume or a carried-on run): if it fails, what it
	// did is void (SPEC A3).
	fresh bool

	mu        sync.Mutex // guards the fields below, written by concurrent tools
	metrics   Metrics
	failErr   error
	interrupt bool
}

// invoke runs one invocation on the job's draft: validation first (SPEC
// I7), then the passes, auto-resumes included. ctx is the job's: the
// actor cancels it (Cancel, Close, a caller gone).
func (a *job) invoke(ctx context.Context, in Input, values map[string]any, emit func(Event) bool) (*Result, error) {
	fresh := !in.IsResume() && !a.interrupts.Activated() && a.pendingCopy() == nil
	before := len(a.history())
	res, err := a.passes(ctx, in, values, emit)
	if err != nil && fresh && !a.interrupts.Activated() && !a.lostSave(err) && !(closedCut(ctx) && a.began(before+len(in.messages))) {
		// A fresh invocation that fails leaves the history as it was
		// (SPEC A3): what it appended is taken back, in the session too.
		// Not one a Close cut off after its prompt: like a crash, that
		// leaves what was saved for the run to be carried on (SPEC S6:
		// its finished tools are not run again, an at-most-once tool it
		// started asks first). Not one that lost a save to another
		// writer either: the agent takes the stored state after the job
		// (reload), and a take-back save would be lost the same way, or,
		// parked for an orchestrator's commit, make that commit fail.
		a.takeBack(ctx, before)
	}
	if res != nil {
		res.History = len(a.history())
	}
	return res, err
}

// lostSave reports whether err is the loss of one of this agent's saves
// to another writer (a *persistence.ConflictError naming its record, SPEC
// S4): its state is stale.
func (a *job) lostSave(err error) bool {
	if err == nil || a.sess == nil {
		return false // before errors.As, whose target would escape on every call
	}
	var ce *persistence.ConflictError
	return errors.As(err, &ce) && ce.Key == a.sess.Key()
}

// awaitsModel reports whether a history ends with a message the model has
// not answered (a prompt, or tool results): a run was cut off before its
// model call ended (a crash, or a failure after the tools ran). A prompt
// appended to it would make two user messages in a row, which models
// refuse or misread; carried on with the empty input, the model answers it.
func awaitsModel(history []model.Message) bool {
	return len(history) > 0 && history[len(history)-1].Role == model.RoleUser
}

// closedCut reports whether ctx, a job's, ended because the agent closes,
// its actor stops, or the node run that invoked it was cut off
// (actors.ErrCutOff): the invocation is cut off as by a crash, to be
// carried on later, not failed.
func closedCut(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, ErrClosed) || errors.Is(cause, actors.ErrCutOff)
}

// began reports whether the invocation got further than its prompt, whose
// history ends at n: it holds a tool cycle, or appended more.
func (a *job) began(n int) bool { return a.pendingCopy() != nil || len(a.history()) > n }

// takeBack truncates the history to its first n messages, in the session
// first; a failed save leaves both as they are.
func (a *job) takeBack(ctx context.Context, n int) {
	a.mu.Lock()
	cur := len(a.messages)
	a.mu.Unlock()
	if cur <= n {
		return
	}
	a.mu.Lock()
	all := a.messages
	a.messages = all[:n:n]
	a.mu.Unlock()
	if err := a.saveFrom(ctx, persistence.SaveInvocation, n); err != nil {
		// The session could not be rewritten: the next save does it.
		a.mu.Lock()
		if !a.diverged || n < a.divergeAt {
			a.diverged, a.divergeAt = true, n
		}
		a.mu.Unlock()
	}
}

func (a *job) passes(ctx context.Context, in Input, values map[string]any, emit func(Event) bool) (*Result, error) {
	for resumes := 0; ; resumes++ {
		if err := a.validate(in); err != nil {
			if resumes > 0 {
				return nil, fmt.Errorf("%w: %w", ErrAutoResume, err)
			}
			return nil, err
		}
		inv := &invocation{a: a, values: values, emit: emit}
		start := time.Now()
		res, err := inv.run(ctx, in)
		if res != nil {
			res.Metrics.Duration = time.Since(start)
		}
		after := &AfterInvocationEvent{Agent: a.view(), Result: res, Err: err}
		if herr := hook.Run(ctx, a.hooks, after); herr != nil && err == nil {
			res, err = nil, fmt.Errorf("AfterInvocation hook: %w", herr)
		}
		if a.lostSave(err) {
			// Stale: a save would be lost the same way (see invoke).
		} else if serr := a.save(ctx, persistence.SaveInvocation); serr != nil && err == nil {
			res, err = nil, serr
		}
		if err != nil {
			return nil, err
		}
		if after.resume == nil {
			return res, nil
		}
		if resumes >= a.cfg.MaxAutoResumes {
			return res, fmt.Errorf("%w (%d)", ErrTooManyResumes, a.cfg.MaxAutoResumes)
		}
		in = *after.resume
	}
}

// validate checks an input against the interrupt state before anything
// changes (SPEC I7).
func (a *job) validate(in Input) error {
	// Callbacks added through Agent.Hooks after New are checked here.
	if err := checkHooks(a.hooks); err != nil {
		return err
	}
	if a.interrupts.Activated() {
		if in.IsEmpty() && !in.resume && len(a.interrupts.Unanswered()) == 0 {
			return nil // a resume whose answers were all saved, cut off: carry on
		}
		if len(in.responses) == 0 && in.resume && len(in.messages) == 0 {
			// Resume() with no answer: it matches ErrResumeRequired, as
			// before, and ErrEmptyResume, as an orchestrator's does.
			var waiting []string
			for _, x := range a.interrupts.Unanswered() {
				waiting = append(waiting, x.ID)
			}
			return &interrupt.EmptyResumeError{Waiting: waiting}
		}
		if len(in.responses) == 0 {
			return &interrupt.ContentError{Types: in.contentKinds()}
		}
		if len(in.messages) > 0 {
			return &interrupt.ContentError{Types: in.contentKinds(), Mixed: true}
		}
		if err := a.answeredElsewhere(in.responses); err != nil {
			return err
		}
		return a.interrupts.CheckResume(in.responses)
	}
	if in.IsResume() {
		if len(in.messages) > 0 {
			return &interrupt.ContentError{Types: in.contentKinds(), Mixed: true}
		}
		if len(in.responses) == 0 {
			return interrupt.ErrNotInterrupted // Resume() with nothing to answer
		}
		return a.interrupts.CheckResume(in.responses)
	}
	if len(in.messages) > 0 && (a.pending != nil || awaitsModel(a.history())) {
		return ErrIncompleteRun
	}
	if len(in.messages) == 0 && len(a.history()) == 0 {
		return ErrEmptyInput
	}
	for i, m := range in.messages {
		if len(m.Content) == 0 {
			return fmt.Errorf("%w: prompt message %d has no content", ErrBadInput, i)
		}
		// What the session could not load back, nor the protobuf form
		// carry (InputFromWire refuses it too).
		if err := m.Validate(); err != nil {
			return fmt.Errorf("%w: prompt message %d: %v", ErrBadInput, i, err)
		}
	}
	if slices.ContainsFunc(in.messages, func(m model.Message) bool { return len(m.ToolResults()) > 0 }) {
		// Tool results in a prompt answer the tool uses just before them,
		// each once, in order (SPEC A3): a provider refuses any other
		// history, and every later call with it.
		msgs := in.messages
		if h := a.history(); len(h) > 0 {
			msgs = append([]model.Message{h[len(h)-1]}, msgs...)
		}
		if err := validateHistory(msgs); err != nil {
			return fmt.Errorf("%w: the prompt's tool results do not answer the tool uses before them: %v", ErrBadInput, err)
		}
	}
	return nil
}

func (inv *invocation) run(ctx context.Context, in Input) (*Result, error) {
	a := inv.a
	resuming := in.IsResume()
	loaded := a.pendingCopy() // work cut off before this invocation
	inv.fresh = !resuming && loaded == nil && !a.interrupts.Activated()
	// A run cut off before this invocation (by a crash, or a Close), which
	// the empty input carries on, goes on counting from the usage its
	// saves stored: its model calls so far are this invocation's too, and
	// nobody was told of them. Any other invocation counts its own calls
	// alone (SPEC A9, M7: a resume's usage is the resume's).
	carried := !resuming && len(in.messages) == 0 && (loaded != nil || a.interrupts.Activated() || awaitsModel(a.history()))
	prior := a.usage // the job's goroutine is the only writer of a.usage
	inv.usage = a.beginUsage(carried)
	if resuming {
		before := a.interrupts.Clone()
		if err := a.interrupts.Resume(in.responses); err != nil {
			a.setUsage(prior)
			return nil, err
		}
		a.answering = in.responses
		// Claim the resume before anything runs (SPEC S4). Unclaimed, the
		// answers are not taken (SPEC I7): the agent waits for them as
		// before, and the caller may answer again.
		if err := a.save(ctx, persistence.SaveResume); err != nil {
			a.interrupts.Restore(before)
			a.answering = nil
			a.setUsage(prior)
			return nil, err
		}
		a.answeredOwn(in.responses)
	}
	if err := hook.Run(ctx, a.hooks, &BeforeInvocationEvent{Agent: a.view(), Resuming: resuming}); err != nil {
		return nil, fmt.Errorf("BeforeInvocation hook: %w", err)
	}
	for _, m := range in.messages {
		if err := inv.appendMessages(ctx, m.Clone()); err != nil {
			return nil, err
		}
	}
	res, err := inv.loop(ctx)
	if err != nil && !a.interrupts.Activated() && (loaded == nil || a.pendingCopy() == nil) && !closedCut(ctx) {
		// A pass that failed before stopping: its interrupts are void, and
		// its cycle is dropped with the model turn that asked for it (not
		// when a Close cut it off: it is carried on, see invoke).
		a.interrupts.Clear()
		a.setPending(nil)
	}
	return res, err
}

func (inv *invocation) loop(ctx context.Context) (*Result, error) {
	a := inv.a
	for {
		var assistant model.Message
		var completed []model.ToolResult
		if a.pending != nil && a.pending.Kind == PendingTools {
			assistant, completed = *a.pending.Message, a.pending.Completed
		} else {
			if inv.cancelled(ctx) {
				return inv.cancelledStop(ctx, inv.lastMessage())
			}
			msg, stop, res, err := inv.modelTurn(ctx)
			if err != nil {
				if inv.cancelled(ctx) {
					return inv.cancelledStop(ctx, inv.lastMessage())
				}
				return nil, inv.ctxErr(ctx, err)
			}
			if res != nil {
				return res, nil
			}
			if stop.StopReason != StopToolUse {
				// The last message of the invocation: saved durably at
				// once, so the end of the invocation has nothing left to
				// make durable unless a hook changes something.
				if err := inv.appendMessagesAt(ctx, persistence.SaveInvocation, msg); err != nil {
					return nil, err
				}
				return inv.result(stop.StopReason, msg), nil
			}
			assistant = msg
		}
		res, err := inv.toolCycle(ctx, assistant, completed)
		if err != nil {
			return nil, inv.ctxErr(ctx, err)
		}
		if res != nil {
			return res, nil
		}
	}
}

func (inv *invocation) cancelled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrCancelled)
}

func (inv *invocation) ctxErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}

func (inv *invocation) lastMessage() model.Message {
	a := inv.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.messages) == 0 {
		return model.Message{Role: model.RoleAssistant}
	}
	return a.messages[len(a.messages)-1].Clone()
}

func (inv *invocation) result(stop StopReason, msg model.Message) *Result {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return &Result{StopReason: stop, Message: msg, Usage: inv.usage, Metrics: inv.metrics}
}

// modelTurn runs BeforeModelCall, the model call and AfterModelCall. It
// returns a non-nil Result when the invocation stops before the model runs.
func (inv *invocation) modelTurn(ctx context.Context) (model.Message, model.MessageStop, *Result, error) {
	a := inv.a
	scope := a.scope(interrupt.SourceHook, interrupt.BeforeModelCallID)
	a.mu.Lock()
	req := &model.Request{SystemPrompt: a.cfg.SystemPrompt, Messages: a.messages[:len(a.messages):len(a.messages)], Tools: a.tools.specs}
	a.mu.Unlock()
	bm := &BeforeModelCallEvent{Agent: a.view(), Request: req, scope: scope}
	err := hook.Run(ctx, a.hooks, bm)
	scope.End()
	if err != nil {
		return model.Message{}, model.MessageStop{}, nil, fmt.Errorf("BeforeModelCall hook: %w", err)
	}
	if scope.Interrupted() {
		a.setPending(&Pending{Kind: PendingModel})
		res, err := inv.stopForInterrupts(ctx, inv.lastMessage())
		return model.Message{}, model.MessageStop{}, res, err
	}
	if a.pending != nil {
		// The gate of an interrupted model call has passed.
		a.setPending(nil)
		a.interrupts.Clear()
	}
	if bm.cancel != nil {
		msg := model.AssistantText(orDefault(*bm.cancel, DefaultCancelModel))
		if err := inv.appendMessages(ctx, msg); err != nil {
			return model.Message{}, model.MessageStop{}, nil, err
		}
		return model.Message{}, model.MessageStop{}, inv.result(StopCancelled, msg), nil
	}
	for attempt := 0; ; attempt++ {
		inv.mu.Lock()
		inv.metrics.ModelCalls++
		inv.mu.Unlock()
		msg, stop, err := inv.callModel(ctx, req)
		after := &AfterModelCallEvent{Agent: a.view(), Message: msg, StopReason: stop.StopReason, Err: err}
		if herr := hook.Run(ctx, a.hooks, after); herr != nil {
			return model.Message{}, model.MessageStop{}, nil, fmt.Errorf("AfterModelCall hook: %w", herr)
		}
		if after.retry && attempt < a.cfg.MaxModelRetries && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return model.Message{}, model.MessageStop{}, nil, fmt.Errorf("model call: %w", err)
		}
		inv.usage = inv.usage.Add(stop.Usage)
		if a.sess != nil {
			// Saved with the save that stores this turn (SPEC S1): no
			// save of its own.
			a.setUsage(inv.usage)
		}
		return msg, stop, nil, nil
	}
}

// callModel streams one model answer. A model that panics fails the call
// with the panic value (SPEC R6).
func (inv *invocation) callModel(ctx context.Context, req *model.Request) (msg model.Message, stop model.MessageStop, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, stop, err = model.Message{}, model.MessageStop{}, &PanicError{Where: "model", Value: r}
		}
	}()
	var acc model.Accumulator
	for ev, err := range inv.a.cfg.Model.Stream(ctx, req) {
		if err != nil {
			return model.Message{}, model.MessageStop{}, err
		}
		if err := acc.Add(ev); err != nil {
			return model.Message{}, model.MessageStop{}, err
		}
		if inv.emit != nil {
			if td, ok := ev.(*model.TextDelta); ok {
				inv.emit(&TextDeltaEvent{Text: td.Text})
			}
		}
	}
	msg, stop, err = acc.Result()
	if err != nil {
		return msg, stop, err
	}
	uniqueToolUseIDs(&msg)
	if inv.emit != nil {
		for _, tu := range msg.ToolUses() {
			inv.emit(&ToolUseEvent{ToolUse: tu.Clone()})
		}
	}
	return msg, stop, nil
}

// toolCycle runs the tools of one assistant message (SPEC A3–A8). It returns
// a non-nil Result when the invocation stops, nil to go on to the next model
// call.
func (inv *invocation) toolCycle(ctx context.Context, assistant model.Message, completed []model.ToolResult) (*Result, error) {
	a := inv.a
	inv.mu.Lock()
	inv.metrics.Cycles++
	inv.interrupt, inv.failErr = false, nil
	inv.mu.Unlock()

	uses := assistant.ToolUses()
	results := make([]*model.ToolResult, len(uses))
	for _, r := range completed {
		for i, u := range uses {
			if results[i] == nil && u.ToolUseID == r.ToolUseID {
				rc := r.Clone()
				results[i] = &rc
				break
			}
		}
	}
	cycle := &toolCycle{ctx: ctx, inv: inv, assistant: assistant, uses: uses, results: results,
		mayCarry: a.sess != nil && inv.emit == nil && builtinExecutor(a.cfg.Executor)}
	if p := a.pendingCopy(); p != nil {
		cycle.loaded, cycle.id = true, p.Cycle
		for _, s := range p.Started { // cut off by a crash (SPEC S6)
			// A mark is its call's: of the unfinished uses with its id
			// (a model may repeat one), the first one without a mark.
			for i, u := range uses {
				if _, marked := cycle.started[i]; !marked && results[i] == nil && u.ToolUseID == s.ToolUseID {
					cycle.markStarted(i, s)
					break
				}
			}
		}
	}
	if cycle.id == "" { // a new cycle, or one stored before cycles had ids
		// 64 random bits: unique among an owner's cycles for any purpose,
		// at a fraction of a UUID's cost (every tool cycle makes one).
		cycle.id = strconv.FormatUint(rand.Uint64(), 36)
	}
	if a.pending == nil {
		// The cycle is in flight: saved before its first tool runs (so a
		// crash does not lose the model's answer, and its tool uses are
		// carried on with the same ids), and with each finished tool.
		a.setPending(&Pending{Kind: PendingTools, Message: &assistant, Completed: []model.ToolResult{}, Cycle: cycle.id})
	} else {
		cycle.saved = true // loaded: it is in the session already
	}

	scope := a.scope(interrupt.SourceHook, interrupt.BeforeToolsID)
	bt := &BeforeToolsEvent{Agent: a.view(), Message: assistant, scope: scope}
	err := hook.Run(ctx, a.hooks, bt)
	scope.End()
	if err != nil {
		return nil, fmt.Errorf("BeforeTools hook: %w", err)
	}
	if scope.Interrupted() {
		a.setPending(cycle.pending())
		return inv.stopForInterrupts(ctx, assistant)
	}

	var remaining []int
	for i := range uses {
		if results[i] == nil {
			remaining = append(remaining, i)
		}
	}
	cancelMsg := ""
	switch {
	case bt.cancel != nil:
		cancelMsg = orDefault(*bt.cancel, DefaultCancelTools)
	case inv.cancelled(ctx):
		cancelMsg = DefaultCancelled
	}
	if cancelMsg != "" {
		for _, i := range remaining {
			cycle.record(i, model.ErrorResult(uses[i].ToolUseID, cancelMsg))
		}
	} else if len(remaining) > 0 {
		tasks := make([]tool.Task, len(remaining))
		for k, i := range remaining {
			tasks[k] = &toolTask{cycle: cycle, i: i, use: uses[i], tool: a.tools.lookup(uses[i].Name)}
		}
		a.cfg.Executor.Execute(ctx, tasks)
		cycle.checkExecuted(remaining)
	}

	inv.mu.Lock()
	failErr, interrupted := inv.failErr, inv.interrupt
	inv.mu.Unlock()
	if failErr != nil || interrupted || hook.Has[AfterToolsEvent](a.hooks) {
		// Not the straight way to the pair's save that record counts on
		// when it leaves the last result to that save (carriedLocked rules
		// out the first two; an AfterTools callback registered since its
		// check is the third): the result is saved now, as record would
		// have saved it, before anything else runs.
		if err := cycle.flush(); err != nil && failErr == nil {
			failErr = err
		}
	}
	if failErr != nil {
		return nil, failErr
	}

	gathered := model.Message{Role: model.RoleUser, Content: cycle.resultBlocks()}
	at := &AfterToolsEvent{Agent: a.view(), Message: gathered}
	herr := hook.Run(ctx, a.hooks, at)
	if interrupted && herr != nil && inv.fresh {
		// A prompt's pass that fails is void, interrupts included: they
		// are not activated (nobody will be told of them), and the
		// invocation takes back its prompt (SPEC A3), as it does when
		// AfterTools fails in a cycle that did not interrupt.
		return nil, fmt.Errorf("AfterTools hook: %w", herr)
	}
	if interrupted {
		a.setPending(cycle.pending())
		cycle.dropMoot()
		res, err := inv.stopForInterrupts(ctx, assistant)
		if herr != nil {
			return nil, fmt.Errorf("AfterTools hook: %w", herr)
		}
		return res, err
	}
	if herr != nil {
		return nil, fmt.Errorf("AfterTools hook: %w", herr)
	}

	// Every tool has a result: append the pair and end the interrupted work
	// in one step, saved once (SPEC A3, A7). When record left the last
	// result to this save (carriedLocked), a failed save fails the
	// invocation as the failed result save would have: the agent is left
	// as that failure leaves it (the pair not in the history, the cycle
	// pending with every result, the interrupt state as it was), so the
	// invocation's clean-up, take-back and end save see the same state; no
	// hook has fired and nothing is told of the result since the tool's
	// end; the caller gets the store's error, named after this save point
	// (message) where the other names tool_result.
	carried := cycle.carried()
	var undo *interrupt.State
	if carried && (a.interrupts.Activated() || a.interrupts.Len() > 0) {
		undo = a.interrupts.Clone() // a resume's; a fresh cycle's is empty
	}
	kept := len(a.history())
	a.interrupts.Clear()
	a.setPending(nil)
	if err := inv.addMessages(ctx, persistence.SaveMessage, assistant, gathered); err != nil {
		if carried {
			a.mu.Lock()
			a.messages = a.messages[:kept:kept]
			a.mu.Unlock()
			a.setPending(cycle.pending())
			if undo != nil {
				a.interrupts.Restore(undo)
			}
		}
		return nil, err
	}
	if err := inv.announce(ctx, assistant, gathered); err != nil {
		return nil, err
	}
	if at.endTurn != nil {
		msg := model.AssistantText(orDefault(*at.endTurn, DefaultEndTurn))
		if err := inv.appendMessages(ctx, msg); err != nil {
			return nil, err
		}
		return inv.result(StopEndTurn, msg), nil
	}
	if inv.cancelled(ctx) {
		return inv.cancelledStop(ctx, gathered)
	}
	return nil, nil
}

// cancelledStop ends an invocation that Cancel stopped, whose last message
// is last. One that stopped before the model answered (its prompt, or the
// tool results of its last cycle, end the history) gets the assistant
// message DefaultCancelledTurn (as Strands TS does for a cancelled model
// stream), so that the history does not end with a user message: that is
// an incomplete run (a crash's, carried on with the empty input), and a
// cancelled run is over: the next prompt is taken (SPEC A3, A9).
func (inv *invocation) cancelledStop(ctx context.Context, last model.Message) (*Result, error) {
	if !awaitsModel(inv.a.history()) {
		return inv.result(StopCancelled, last), nil
	}
	msg := model.AssistantText(DefaultCancelledTurn)
	if err := inv.appendMessages(ctx, msg); err != nil {
		return nil, err
	}
	return inv.result(StopCancelled, msg), nil
}

// stopForInterrupts activates and saves the interrupt state, and only then
// tells anyone (SPEC I9).
func (inv *invocation) stopForInterrupts(ctx context.Context, msg model.Message) (*Result, error) {
	a := inv.a
	a.interrupts.Activate()
	if err := a.save(ctx, persistence.SaveInterrupt); err != nil {
		return nil, err
	}
	res := inv.result(StopInterrupt, msg.Clone())
	res.Interrupts = a.interrupts.Unanswered()
	if inv.emit != nil {
		for _, in := range res.Interrupts {
			inv.emit(&InterruptEvent{Interrupt: in.Clone()})
		}
	}
	return res, nil
}

// appendMessages appends messages to the history, saves once, then fires
// MessageAdded for each.
func (inv *invocation) appendMessages(ctx context.Context, msgs ...model.Message) error {
	return inv.appendMessagesAt(ctx, persistence.SaveMessage, msgs...)
}

// appendMessagesAt is appendMessages saving at point.
func (inv *invocation) appendMessagesAt(ctx context.Context, point persistence.SavePoint, msgs ...model.Message) error {
	if err := inv.addMessages(ctx, point, msgs...); err != nil {
		return err
	}
	return inv.announce(ctx, msgs...)
}

// addMessages appends messages to the history and saves at point.
func (inv *invocation) addMessages(ctx context.Context, point persistence.SavePoint, msgs ...model.Message) error {
	a := inv.a
	a.mu.Lock()
	a.messages = append(a.messages, msgs...)
	a.mu.Unlock()
	return a.save(ctx, point)
}

// announce fires MessageAdded for messages just added and saved, and
// streams them.
func (inv *invocation) announce(ctx context.Context, msgs ...model.Message) error {
	a := inv.a
	for _, m := range msgs {
		if err := hook.Run(ctx, a.hooks, &MessageAddedEvent{Agent: a.view(), Message: m}); err != nil {
			return fmt.Errorf("MessageAdded hook: %w", err)
		}
		if inv.emit != nil {
			inv.emit(&MessageEvent{Message: m.Clone()})
		}
	}
	return nil
}

// save hands the session to its writer at a save point. The history is
// append-only: only the messages after the stored ones are encoded and sent.
func (a *job) save(ctx context.Context, point persistence.SavePoint) error {
	return a.saveFrom(ctx, point, -1)
}

// saveFrom saves like save, but keeps only the first keep stored messages
// and replaces the rest (keep < 0: append).
func (a *job) saveFrom(ctx context.Context, point persistence.SavePoint, keep int) error {
	if a.sess == nil {
		return nil
	}
	rec := &persistence.AgentRecord{State: a.kv.All(), Interrupts: a.interrupts}
	a.mu.Lock()
	rec.Messages = a.messages[:len(a.messages):len(a.messages)]
	a.mu.Unlock()
	a.mu.Lock()
	rec.Usage = a.usage // the usage counting the turns this save stores
	if a.pending != nil {
		p, err := a.pending.appendJSON(nil) // under mu, as pendingCopy reads it
		if err != nil {
			a.mu.Unlock()
			return fmt.Errorf("save session (%s): %w", point, err)
		}
		rec.Pending = p
	}
	a.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	a.mu.Lock()
	if a.diverged && (keep < 0 || keep > a.divergeAt) {
		keep = a.divergeAt
	}
	a.mu.Unlock()
	var err error
	if keep < 0 {
		err = a.sess.Save(ctx, rec, point)
	} else {
		err = a.sess.Rewrite(ctx, rec, keep, point)
	}
	if err != nil {
		return fmt.Errorf("save session (%s): %w", point, err)
	}
	a.mu.Lock()
	a.diverged = false
	a.mu.Unlock()
	if a.commit != nil {
		a.commit(a.published())
	}
	return nil
}

// beginUsage returns the usage an invocation starts from: the latest
// invocation's so far when it carries that one on, else zero, which the
// next save stores. It locks only to change a.usage: an invocation
// without a session, which never counts into it, takes no lock.
func (a *job) beginUsage(carried bool) model.Usage {
	if !carried && a.usage != (model.Usage{}) {
		a.setUsage(model.Usage{})
	}
	return a.usage
}

// setUsage sets the usage the next save stores (Snapshot.Usage).
func (a *job) setUsage(u model.Usage) {
	a.mu.Lock()
	a.usage = u
	a.mu.Unlock()
}

// idempotencyKey is the stable key of a tool use (SPEC S6): session,
// agent and tool-use id.
func (a *job) idempotencyKey(toolUseID string) string {
	owner := a.cfg.ID
	if a.cfg.OwnerPath != "" {
		owner = a.cfg.OwnerPath + "/" + owner
	}
	if a.sess == nil {
		return owner + "/" + toolUseID
	}
	return a.sess.Key().SessionID + "/" + owner + "/" + toolUseID
}

// scope returns an interrupt scope on the draft whose ids are those of
// name under source (ids of SPEC I2), carrying the owner path if the
// agent has one.
func (a *job) scope(source interrupt.Source, id func(name string) string) *interrupt.Scope {
	if p := a.cfg.OwnerPath; p != "" {
		inner := id
		id = func(name string) string { return interrupt.OwnedID(p, inner(name)) }
	}
	return interrupt.NewScope(a.interrupts, source, id)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// toolCycle collects the results of one cycle's tools.
type toolCycle struct {
	ctx       context.Context
	inv       *invocation
	assistant model.Message
	uses      []model.ToolUse
	mu        sync.Mutex
	results   []*model.ToolResult
	// started: at-most-once tools started and without a result, by index
	// in uses (not by tool-use id: a model may give two calls one id, and
	// each has a start of its own); those loaded with the pending cycle
	// were cut off by a crash.
	started map[int]ToolStart
	// saved: the pending cycle is in the session.
	saved bool
	// mayCarry: the cycle's last result may be left to the pair's save
	// (carriedLocked): a session, no stream consumer, Braid's own executor.
	mayCarry bool
	// carry: record left the last result to the pair's save, unsaved.
	carry bool
	// id: the cycle's Pending.Cycle; loaded: the cycle was stopped (for
	// interrupts) or cut off before, and is carried on. Both reach the
	// tools as a callInfo.
	id     string
	loaded bool
}

// ensureSaved saves the pending cycle before a tool runs, once.
func (c *toolCycle) ensureSaved() bool {
	a := c.inv.a
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.saved || a.sess == nil {
		return true
	}
	return c.saveLocked(persistence.SaveMessage)
}

// saveLocked saves the cycle's pending work at point; a failed save fails
// the invocation. The caller holds c.mu.
func (c *toolCycle) saveLocked(point persistence.SavePoint) bool {
	a := c.inv.a
	a.setPending(c.pendingLocked())
	if err := a.save(c.ctx, point); err != nil {
		c.inv.fail(err)
		return false
	}
	c.saved = true
	return true
}

// pending returns the cycle's pending work: its results so far and the
// at-most-once tools started without one.
// dropMoot drops the unanswered interrupts of the tool uses that have a
// result: a hook that asked in an earlier pass and let its tool run in
// this one without an answer (the seed's "trust" answer given to another
// call), or a tool that asked and then finished without asking again.
// Their work is done: listing them would ask about it after the fact, and
// an answer would be taken and ignored (SPEC I8: the result lists what
// the owner still waits for).
func (c *toolCycle) dropMoot() {
	c.mu.Lock()
	// A tool use id is done when every use with it has a result: a model
	// may repeat an id, and the interrupt ids carry only the id, so one
	// use's result must not drop the question of another that still waits.
	done := make(map[string]bool, len(c.results))
	for i, r := range c.results {
		id := c.uses[i].ToolUseID
		if d, seen := done[id]; !seen || d {
			done[id] = r != nil
		}
	}
	c.mu.Unlock()
	if len(done) == 0 {
		return
	}
	c.inv.a.interrupts.DropUnanswered(func(id string) bool {
		_, own := interrupt.SplitOwner(id)
		for _, prefix := range []string{"v1:before_tool_call:", "v1:tool_call:"} {
			rest, ok := strings.CutPrefix(own, prefix)
			if !ok {
				continue
			}
			if i := strings.LastIndexByte(rest, ':'); i >= 0 {
				return done[rest[:i]]
			}
		}
		return false
	})
}

func (c *toolCycle) pending() *Pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pendingLocked()
}

func (c *toolCycle) pendingLocked() *Pending {
	// A copy of the message, not a pointer into c: the committed Pending
	// outlives the cycle, and must not keep it (and its job) in memory.
	assistant := c.assistant
	p := &Pending{Kind: PendingTools, Message: &assistant, Completed: make([]model.ToolResult, 0, len(c.results)), Cycle: c.id}
	for i, x := range c.results {
		if x != nil {
			p.Completed = append(p.Completed, x.Clone())
		} else if s, ok := c.started[i]; ok {
			p.Started = append(p.Started, s)
		}
	}
	return p
}

// markStarted records s as the start of call i; the map is made at the
// first mark (most cycles have no at-most-once tool). The caller holds
// c.mu, or owns c alone.
func (c *toolCycle) markStarted(i int, s ToolStart) {
	if c.started == nil {
		c.started = make(map[int]ToolStart, 1)
	}
	c.started[i] = s
}

// crashed returns the start mark of call i if a crash cut it off.
func (c *toolCycle) crashed(i int) (ToolStart, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.started[i]
	return s, ok
}

// start saves durably that an at-most-once tool starts (SPEC S6), before
// it runs; a failed save fails the invocation and the tool does not run.
func (c *toolCycle) start(i int, id string) bool {
	a := c.inv.a
	if a.sess == nil {
		return true
	}
	// The recovery of a start cut off by a crash is an interrupt whose id
	// is made from the start's time (recover), so that no answer to the
	// recovery of an earlier start of the call is taken for it. A clock
	// that has not moved since such a start (Windows' ticks every few
	// milliseconds) or went back must not give this start that id: the
	// time is moved on by a nanosecond until the id is new.
	at := a.now().UTC()
	for {
		if _, known := a.interrupts.Get(recoveryID(id, at)); !known {
			break
		}
		at = at.Add(time.Nanosecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markStarted(i, ToolStart{ToolUseID: id, StartedAt: at})
	return c.saveLocked(persistence.SaveToolStart)
}

// unstart forgets a start mark: the tool returned (an interrupt), it was
// not cut off. The next save records it.
func (c *toolCycle) unstart(i int) {
	c.mu.Lock()
	delete(c.started, i)
	c.mu.Unlock()
}

// record keeps a finished tool's result and saves it with the pending cycle
// before anyone hears of it, so the tool is not run again after a crash
// (SPEC S1, S6), unless the pair's save carries it (carriedLocked).
func (c *toolCycle) record(i int, r model.ToolResult) {
	a := c.inv.a
	saved := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock() // a store that panics leaves nothing locked
		c.results[i] = &r
		delete(c.started, i)
		if a.sess == nil {
			return true
		}
		if c.carriedLocked(i) {
			c.carry = true // no consumer to tell (mayCarry)
			return true
		}
		return c.saveLocked(persistence.SaveToolResult)
	}()
	// A consumer is told only of what is saved (SPEC I9): a result whose
	// save failed is not sent; the invocation fails with the store's error.
	if saved && c.inv.emit != nil {
		c.inv.emit(&ToolResultEvent{Result: r.Clone()})
	}
}

// carriedLocked reports whether the save of result i, just recorded, is
// left to the save of the tool-use/result pair that toolCycle makes next,
// which carries the result inside the history: one save fewer a cycle.
// That is when only Braid's own code runs, and nothing is told of the
// result, between the tool's end and that save:
//
//   - i is the cycle's last missing result: every other tool use has one,
//     recorded and saved (a failed save sets failErr, checked here), so no
//     other tool runs, starts or interrupts, and the cycle does not stop
//     for interrupts (none is raised: checked here);
//   - no AfterToolCall and no AfterTools callback is registered: no user
//     code runs before the pair's save, no hook can Retry (the
//     MaxToolRetries path runs the tool again before any record), fail,
//     replace a result or end the turn (AfterToolCall of this tool has run
//     already; one registered later fires for no tool of this cycle; an
//     AfterTools callback registered later makes toolCycle save the
//     result before it fires, see flush);
//   - no stream consumer (mayCarry): no ToolResultEvent is sent before the
//     pair's save (SPEC I9: told only of what is saved);
//   - a session (mayCarry): without one nothing is saved anyway;
//   - the executor is Braid's (mayCarry): a custom one is user code that
//     may run between the last task's end and its return.
//
// Between here and the pair's save the code is then Braid's: the end of
// finish and Run (or of Prepare, for a cancelled or unknown tool, or of
// toolCycle's loop over a cancelled batch), the executor's return,
// toolCycle's reads of failErr and interrupt, an AfterTools dispatch with
// no callback, the clearing of the interrupt state and pending work in
// memory, and the save. Cancellation changes nothing there: saves run
// without the caller's cancellation, and toolCycle looks at it only after.
//
// A crash (kill -9) anywhere from the tool's end to the pair's commit
// leaves the store as the last save before the tool's end left it, which
// is exactly what a crash just before a result save of its own commits
// leaves: the tool is run again on recovery (at least once, SPEC S6, with
// the same idempotency key), and an at-most-once tool's start mark, saved
// durably by start and dropped only with the pending work by the pair's
// save, is still stored, so recovery raises braid.recovery. A crash after
// the pair's commit finds the result in the history, as one after a result
// save finds it in the pending work: the tool is not run again. Both are
// atomic, non-durable save points, so durability is unchanged too: the
// next durable point (at the latest the invocation's end) covers either.
// A failed pair's save fails the invocation as a failed result save does
// (see toolCycle). The caller holds c.mu.
func (c *toolCycle) carriedLocked(i int) bool {
	if !c.mayCarry {
		return false
	}
	for j, x := range c.results {
		if j != i && x == nil {
			return false
		}
	}
	inv := c.inv
	inv.mu.Lock()
	clean := inv.failErr == nil && !inv.interrupt
	inv.mu.Unlock()
	if !clean {
		return false
	}
	hooks := inv.a.hooks
	return !hook.Has[AfterToolCallEvent](hooks) && !hook.Has[AfterToolsEvent](hooks)
}

// carried reports whether record left the last result to the pair's save.
func (c *toolCycle) carried() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.carry
}

// flush makes the result save record left to the pair's save, for a path
// that does not go straight to it; a failed save fails the invocation, as
// in record, and its error is returned.
func (c *toolCycle) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.carry {
		return nil
	}
	c.carry = false
	if c.saveLocked(persistence.SaveToolResult) {
		return nil
	}
	c.inv.mu.Lock()
	defer c.inv.mu.Unlock()
	return c.inv.failErr
}

// builtinExecutor reports whether e is one of Braid's executors, which
// run no code of their own between a task's end and their return.
func builtinExecutor(e tool.Executor) bool {
	switch e.(type) {
	case tool.Concurrent, *tool.Concurrent, tool.Sequential, *tool.Sequential:
		return true
	}
	return false
}

func (c *toolCycle) resultBlocks() []model.ContentBlock {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]model.ContentBlock, 0, len(c.results))
	for _, r := range c.results {
		if r != nil {
			out = append(out, model.ToolResultBlock(r.Clone()))
		}
	}
	return out
}

func (inv *invocation) fail(err error) {
	inv.mu.Lock()
	if inv.failErr == nil {
		inv.failErr = err
	}
	inv.mu.Unlock()
}

func (inv *invocation) markInterrupted() {
	inv.mu.Lock()
	inv.interrupt = true
	inv.mu.Unlock()
}

// checkExecuted fails the invocation with tool.ErrExecutor when the
// executor returned leaving one of the remaining calls without a result
// while none was interrupted and nothing failed: the cycle would otherwise
// append a tool use without its result (SPEC A3).
func (c *toolCycle) checkExecuted(remaining []int) {
	inv := c.inv
	inv.mu.Lock()
	settled := inv.failErr != nil || inv.interrupt
	inv.mu.Unlock()
	if settled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range remaining {
		if c.results[i] == nil {
			inv.fail(fmt.Errorf("%w: %T returned leaving tool %s (%s) without a result and no call interrupted",
				tool.ErrExecutor, inv.a.cfg.Executor, c.uses[i].Name, c.uses[i].ToolUseID))
			return
		}
	}
}

// toolTask is one tool call of a cycle, as the executor runs it.
type toolTask struct {
	cycle *toolCycle
	i     int
	use   model.ToolUse
	tool  tool.Tool
	// stage is where the executor is in the task's contract (tool.Task):
	// taskNew, taskPreparing, taskReady (prepared, to run), taskDone.
	stage atomic.Int32
}

// The stages of a toolTask.
const (
	taskNew int32 = iota
	taskPreparing
	taskReady
	taskDone
)

// misuse fails the invocation for an executor that called the task out of
// the order tool.Task states.
func (t *toolTask) misuse(what string) {
	t.cycle.inv.fail(fmt.Errorf("%w: %s (tool %s, %s)", tool.ErrExecutor, what, t.use.Name, t.use.ToolUseID))
}

// ExclusiveKey implements tool.ExclusiveTask: the key of the tool the call
// runs (see tool.Exclusive), as its BeforeToolCall callbacks rewrote it
// (SetToolUse), also when they stopped it for an interrupt.
func (t *toolTask) ExclusiveKey() (key string) {
	if t.tool == nil {
		return ""
	}
	var stop bool
	defer t.contain(&stop) // a panic fails the invocation, whose tasks then run nothing
	return tool.ExclusiveKey(t.tool)
}

// Prepare runs BeforeToolCall (SPEC A4, A8, A13). A tool whose invocation
// was stopped before it starts (a sequential executor's, after the tool
// before it) does not start: a Cancel gives it the error result
// DefaultCancelled without its hooks, as a Cancel before the batch gives
// every tool; a caller gone or a Close leaves it without a result, cut
// off as by a crash (SPEC S6), and stops the executor.
func (t *toolTask) Prepare(ctx context.Context) (run, stop bool) {
	defer t.contain(&stop)
	if !t.stage.CompareAndSwap(taskNew, taskPreparing) {
		t.misuse("Prepare called twice")
		return false, true
	}
	run, stop = t.prepare(ctx)
	if run {
		t.stage.Store(taskReady)
	} else {
		t.stage.Store(taskDone)
	}
	return run, stop
}

func (t *toolTask) prepare(ctx context.Context) (run, stop bool) {
	inv := t.cycle.inv
	a := inv.a
	id := t.use.ToolUseID
	if ctx.Err() != nil {
		if inv.cancelled(ctx) {
			t.cycle.record(t.i, model.ErrorResult(id, DefaultCancelled))
			return false, false
		}
		inv.fail(fmt.Errorf("%w: tool %s (%s) was not started", context.Cause(ctx), t.use.Name, id))
		return false, true
	}
	scope := a.scope(interrupt.SourceHook, func(name string) string {
		return interrupt.BeforeToolCallID(id, name)
	})
	// A copy: the history's tool use (its input bytes) is out of reach of
	// a callback that writes into the event's.
	ev := &BeforeToolCallEvent{Agent: a.view(), ToolUse: t.use.Clone(), Tool: t.tool, scope: scope,
		tool: t.tool, id: id, lookup: a.tools.lookup}
	a.hookMu.Lock()
	err := hook.Run(ctx, a.hooks, ev)
	a.hookMu.Unlock()
	scope.End()
	if err == nil {
		err = checkRewrite(t.use, ev)
	}
	if err != nil {
		inv.fail(fmt.Errorf("BeforeToolCall hook (%s, %s): %w", t.use.Name, id, err))
		return false, true
	}
	if scope.Interrupted() {
		if ev.rewritten != nil {
			// The call does not run in this pass, and the rewrite is
			// dropped (see SetToolUse); but the tool it names is the one
			// the call runs on resume, when the callbacks rewrite it
			// again: its exclusive key holds back the later calls of that
			// key (tool.Exclusive), as the key of the model's tool would.
			t.tool = ev.tool
		}
		inv.markInterrupted()
		return false, true
	}
	if ev.cancel != nil {
		msg := orDefault(*ev.cancel, DefaultCancelTool)
		t.finish(ctx, model.ErrorResult(id, msg), nil, msg, false)
		return false, false
	}
	if ev.rewritten != nil {
		// The call runs as rewritten, under the model's id; the history
		// keeps the model's tool use (see SetToolUse).
		t.use, t.tool = *ev.rewritten, ev.tool
	}
	if t.tool == nil {
		t.finish(ctx, model.ErrorResult(id, fmt.Sprintf(unknownToolResultFmt, t.use.Name)), nil, "", false)
		return false, false
	}
	return true, false
}

// checkRewrite refuses what the BeforeToolCall callbacks left in ev that
// the call cannot run with: a ToolUse or a Tool changed in place, not
// through SetToolUse (SPEC A1: writable fields are setters; the change
// would otherwise be ignored, or run a tool other than the one ToolUse
// names), or a rewritten input that is not JSON.
func checkRewrite(use model.ToolUse, ev *BeforeToolCallEvent) error {
	want := use
	if ev.rewritten != nil {
		want = *ev.rewritten
	}
	got := ev.ToolUse
	if got.ToolUseID != want.ToolUseID || got.Name != want.Name || !bytes.Equal(got.Input, want.Input) {
		return fmt.Errorf("%w: a callback changed ToolUse in place; rewrite the call with SetToolUse", ErrBadInput)
	}
	if !sameTool(ev.Tool, ev.tool) {
		return fmt.Errorf("%w: a callback changed Tool in place; name the tool to run with SetToolUse", ErrBadInput)
	}
	if ev.rewritten != nil && len(want.Input) > 0 && (!json.Valid(want.Input) || !utf8.Valid(want.Input)) {
		return fmt.Errorf("%w: SetToolUse: the input of %s is not one JSON value in UTF-8", ErrBadInput, want.Name)
	}
	return nil
}

// sameTool reports whether got is want. A tool value that cannot be
// compared (its dynamic type holds a slice, a map or a func) is taken as
// unchanged when its type is want's: it cannot be told apart, and the
// call runs want all the same.
func sameTool(got, want tool.Tool) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	if g.Type() != w.Type() {
		return false
	}
	if !g.Comparable() || !w.Comparable() {
		return true
	}
	return got == want
}

// Run runs the tool and AfterToolCall (SPEC A6, A13), once, after a
// Prepare that said to run it: otherwise it runs nothing and fails the
// invocation (tool.ErrExecutor).
func (t *toolTask) Run(ctx context.Context) (stop bool) {
	defer t.contain(&stop)
	if !t.stage.CompareAndSwap(taskReady, taskDone) {
		t.misuse("Run called twice, or without a Prepare that said to run the tool")
		return true
	}
	return t.run(ctx)
}

// contain turns a panic in Prepare or Run outside the tool's own Run and
// the hooks (which tool.Invoke and hook.Run contain), such as one in a
// custom tool's RunsAtMostOnce or ExclusiveKey, into a failed invocation
// (SPEC R6): an executor may call them on a goroutine of its own, where a
// panic would take the process down. It sets *stop so the executor
// stops.
func (t *toolTask) contain(stop *bool) {
	if p := recover(); p != nil {
		t.cycle.inv.fail(&PanicError{Where: fmt.Sprintf("tool %s (%s)", t.use.Name, t.use.ToolUseID), Value: p})
		*stop = true
	}
}

func (t *toolTask) run(ctx context.Context) bool {
	inv := t.cycle.inv
	a := inv.a
	id := t.use.ToolUseID
	inv.mu.Lock()
	failed := inv.failErr != nil
	inv.mu.Unlock()
	if failed {
		return false
	}
	if ctx.Err() != nil {
		// Stopped before the tool starts (an executor starts a call held
		// back behind another of its exclusive key only when that one
		// ends, tool.Exclusive): it does not start. A Cancel gives it the
		// error result DefaultCancelled, and its AfterToolCall fires, as
		// its BeforeToolCall did; a caller gone or a Close leaves it
		// without a result, cut off as by a crash (SPEC S6), as Prepare
		// does for a call it has not prepared.
		if inv.cancelled(ctx) {
			t.finish(ctx, model.ErrorResult(id, DefaultCancelled), nil, DefaultCancelled, false)
			return false
		}
		inv.fail(fmt.Errorf("%w: tool %s (%s) was not started", context.Cause(ctx), t.use.Name, id))
		return true
	}
	once := tool.RunsAtMostOnce(t.tool)
	if !once && !t.cycle.ensureSaved() {
		return false
	}
	if mark, ok := t.cycle.crashed(t.i); ok && once {
		if rerun, stop := t.recover(ctx, mark); !rerun {
			return stop
		}
	}
	for attempt := 0; ; attempt++ {
		if once && !t.cycle.start(t.i, id) {
			return false
		}
		tc := tool.NewContext(t.use, a.scope(interrupt.SourceTool, func(name string) string { return interrupt.ToolCallID(id, name) }), a.kv, inv.values,
			tool.WithIdempotencyKey(a.idempotencyKey(id)))
		info := callInfo{cycle: t.cycle.id, rerun: t.cycle.loaded && attempt == 0}
		content, err := tool.Invoke(context.WithValue(ctx, callInfoKey{}, info), t.tool, tc, t.use.Input)
		tc.Scope().End()
		if tc.Interrupted() {
			t.cycle.unstart(t.i)
			inv.markInterrupted()
			return true
		}
		if err != nil && ctx.Err() != nil && !inv.cancelled(ctx) {
			// Cut off by a Close, the actor's stop or the caller leaving
			// (not by Cancel, whose tools end with their error results):
			// the error is the cut, not the tool's result, so none is
			// recorded and AfterToolCall does not fire, as after a crash.
			// A run carried on later runs the tool again, or, if it runs
			// at most once (its start mark stays), asks first (SPEC S6).
			inv.fail(fmt.Errorf("%w: tool %s (%s) was cut off and has no result: %v", context.Cause(ctx), t.use.Name, id, err))
			return true
		}
		inv.mu.Lock()
		inv.metrics.ToolCalls++
		inv.mu.Unlock()
		var res model.ToolResult
		if err == nil {
			res = model.ToolResult{ToolUseID: id, Status: model.ToolSuccess, Content: content}
			if verr := checkResult(res); verr != nil {
				err = fmt.Errorf("tool %s returned an invalid result: %w", t.use.Name, verr)
			}
		}
		if err != nil {
			res = model.ErrorResult(id, err.Error())
		}
		canRetry := attempt < a.cfg.MaxToolRetries && ctx.Err() == nil
		if !t.finish(ctx, res, err, "", canRetry) {
			return false
		}
	}
}

// RecoveryInterrupt is the name of the interrupt an agent raises for an
// at-most-once tool cut off by a crash (SPEC S6); answer RecoveryRerun to
// run it again.
const (
	RecoveryInterrupt = "braid.recovery"
	RecoveryRerun     = "rerun"
)

// RecoveryReason is the reason of a RecoveryInterrupt.
type RecoveryReason struct {
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	StartedAt time.Time       `json:"startedAt"`
}

// recover handles an at-most-once tool cut off by a crash: it raises the
// recovery interrupt, or, answered, reports whether to run the tool again;
// any answer but "rerun" records an error result. stop is Run's result
// when the tool is not run.
func (t *toolTask) recover(ctx context.Context, mark ToolStart) (rerun, stop bool) {
	inv := t.cycle.inv
	// Each cut-off start has a recovery of its own: the interrupt is named
	// braid.recovery, and its id is that of a tool interrupt of the tool
	// use named after the start's time, so no earlier answer (to the
	// recovery of an earlier start) is ever taken for it.
	scope := inv.a.scope(interrupt.SourceTool, func(string) string { return recoveryID(t.use.ToolUseID, mark.StartedAt) })
	input := t.use.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	ans, err := scope.Interrupt(RecoveryInterrupt, RecoveryReason{Tool: t.use.Name, Input: input, StartedAt: mark.StartedAt})
	scope.End()
	if scope.Interrupted() {
		inv.markInterrupted()
		return false, true
	}
	if err != nil {
		inv.fail(fmt.Errorf("recovery of %s (%s): %w", t.use.Name, t.use.ToolUseID, err))
		return false, false
	}
	if s, _ := ans.String(); s == RecoveryRerun {
		return true, false
	}
	msg := fmt.Sprintf("the run of %s started at %s was cut off by a crash and was not run again (answer: %s)",
		t.use.Name, mark.StartedAt.Format(time.RFC3339), ans.Raw())
	t.finish(ctx, model.ErrorResult(t.use.ToolUseID, msg), nil, "", false)
	return false, false
}

// recoveryID is the id of the recovery interrupt of the start of tool use
// toolUseID at the time at: a tool interrupt of the tool use named after
// the start's time.
func recoveryID(toolUseID string, at time.Time) string {
	return interrupt.ToolCallID(toolUseID, RecoveryInterrupt+"@"+at.Format(time.RFC3339Nano))
}

// finish fires AfterToolCall and records the result, unless a hook asked for
// a retry that is allowed; it reports whether to retry.
func (t *toolTask) finish(ctx context.Context, res model.ToolResult, toolErr error, cancelled string, canRetry bool) bool {
	inv := t.cycle.inv
	a := inv.a
	ev := &AfterToolCallEvent{Agent: a.view(), ToolUse: t.use, Tool: t.tool, Result: res, Err: toolErr, Cancelled: cancelled}
	a.hookMu.Lock()
	err := hook.Run(ctx, a.hooks, ev)
	a.hookMu.Unlock()
	if err != nil {
		inv.fail(fmt.Errorf("AfterToolCall hook (%s, %s): %w", t.use.Name, t.use.ToolUseID, err))
		return false
	}
	if ev.retry && canRetry {
		return true
	}
	if ev.replaced != nil {
		if err := checkResult(*ev.replaced); err != nil {
			inv.fail(fmt.Errorf("AfterToolCall hook (%s, %s): SetResult: %w: %w", t.use.Name, t.use.ToolUseID, ErrBadInput, err))
			return false
		}
		res = *ev.replaced
	}
	t.cycle.record(t.i, res)
	return false
}

// checkResult refuses a tool result the session could not load back, nor
// the protobuf form carry (SPEC S5, R2): one model.ToolResult.Validate
// refuses (no status, a content block with neither text nor JSON, or
// both), or whose JSON content is empty, not JSON or not UTF-8.
func checkResult(r model.ToolResult) error {
	if err := r.Validate(); err != nil {
		return err
	}
	for i, c := range r.Content {
		if c.JSON != nil && (!json.Valid(c.JSON) || !utf8.Valid(c.JSON)) {
			return fmt.Errorf("toolResult %s: content %d: json is not one JSON value in UTF-8", r.ToolUseID, i)
		}
	}
	return nil
}
