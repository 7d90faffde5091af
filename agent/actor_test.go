package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// driver is a plain Proto.Actor test actor that talks to an agent's actor
// by protobuf messages only (SPEC R2): send makes it send a request with
// itself as the sender, and every reply it receives goes to replies. Each
// message is marshalled and unmarshalled on the way, as if it crossed a
// process.
type driver struct {
	t       *testing.T
	sys     *actors.System
	pid     *actor.PID
	replies chan proto.Message
}

type driveMsg struct {
	to  *actor.PID
	msg proto.Message
}

type driverActor struct{ d *driver }

func (x *driverActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *driveMsg:
		c.Request(m.to, wireTrip(x.d.t, m.msg))
	case proto.Message:
		x.d.replies <- wireTrip(x.d.t, m)
	}
}

// wireTrip returns msg after a protobuf round trip.
func wireTrip(t *testing.T, msg proto.Message) proto.Message {
	b, err := proto.Marshal(msg)
	if err != nil {
		t.Errorf("marshal %T: %v", msg, err)
		return msg
	}
	out := msg.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(b, out); err != nil {
		t.Errorf("unmarshal %T: %v", msg, err)
		return msg
	}
	return out
}

func newDriver(t *testing.T, sys *actors.System) *driver {
	t.Helper()
	d := &driver{t: t, sys: sys, replies: make(chan proto.Message, 256)}
	pid, err := sys.Spawn(func() actor.Actor { return &driverActor{d: d} })
	require.NoError(t, err)
	d.pid = pid
	return d
}

// send has the driver send msg to the agent's actor.
func (d *driver) send(t *testing.T, a *agent.Agent, msg proto.Message) {
	t.Helper()
	pid, err := a.Binding().Activate(context.Background())
	require.NoError(t, err)
	d.sys.Root().Send(d.pid, &driveMsg{to: pid, msg: msg})
}

// next returns the next reply. The time limit only turns a hang into a
// failure.
func (d *driver) next(t *testing.T) proto.Message {
	t.Helper()
	select {
	case m := <-d.replies:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no reply from the agent's actor")
		return nil
	}
}

// none checks that no reply is waiting.
func (d *driver) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-d.replies:
		t.Fatalf("unexpected reply %T: %v", m, m)
	default:
	}
}

func wirePrompt(t *testing.T, text string) *braidv1.AgentInvoke {
	t.Helper()
	b, err := json.Marshal(model.UserText(text))
	require.NoError(t, err)
	return &braidv1.AgentInvoke{Input: &braidv1.AgentInput{Messages: [][]byte{b}}}
}

func wireResume(id string, answer string) *braidv1.AgentInvoke {
	return &braidv1.AgentInvoke{Input: &braidv1.AgentInput{Resume: true, Responses: []*braidv1.InterruptResponse{
		{InterruptId: id, Response: []byte(`"` + answer + `"`)},
	}}}
}

func asResult(t *testing.T, m proto.Message) *agent.Result {
	t.Helper()
	if e, ok := m.(*braidv1.Error); ok {
		t.Fatalf("error reply: %v", agent.ErrorFromWire(e))
	}
	w, ok := m.(*braidv1.AgentResult)
	require.True(t, ok, "reply %T", m)
	r, err := agent.ResultFromWire(w)
	require.NoError(t, err)
	return r
}

func asError(t *testing.T, m proto.Message) error {
	t.Helper()
	w, ok := m.(*braidv1.Error)
	require.True(t, ok, "reply %T, want an Error", m)
	return agent.ErrorFromWire(w)
}

// approvalAgent is an agent on a session whose delete_files tool is gated
// by a BeforeToolCall approval; block, if not nil, makes the tool wait.
func approvalAgent(t *testing.T, sys *actors.System, store persistence.Store, block <-chan struct{}, started chan<- struct{}) (*agent.Agent, *counter) {
	t.Helper()
	runs := &counter{}
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc(tc.ToolUse.ToolUseID)
		if started != nil {
			started <- struct{}{}
		}
		if block != nil {
			<-block
		}
		return "deleted", nil
	})
	sm, err := persistence.NewSessionManager(store, "s1")
	require.NoError(t, err)
	return newAgent(t, agent.Config{System: sys, Session: sm, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "approval")},
		Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}))}), runs
}

// SPEC R1, R2: a test actor drives an agent by protobuf messages only: a
// prompt ends in an interrupt, the resume by id completes the run, and the
// tool ran once.
func TestAgentActor_DrivenByProtobufInterruptAndResume(t *testing.T) {
	sys := actorstest.System(t)
	a, runs := approvalAgent(t, sys, memory.New(), nil, nil)
	d := newDriver(t, sys)

	d.send(t, a, wirePrompt(t, "delete a"))
	res := asResult(t, d.next(t))
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	assert.Equal(t, interrupt.BeforeToolCallID("t1", "approval"), id)
	assert.Equal(t, 0, runs.total())

	d.send(t, a, &braidv1.AgentStatusRequest{})
	st, ok := d.next(t).(*braidv1.AgentStatus)
	require.True(t, ok)
	assert.Equal(t, braidv1.AgentState_AGENT_STATE_INTERRUPTED, st.GetState())
	require.Len(t, st.GetInterrupts(), 1)
	assert.Equal(t, id, st.GetInterrupts()[0].GetId())

	d.send(t, a, wireResume(id, "y"))
	res = asResult(t, d.next(t))
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "done", res.Message.Text())
	assert.Equal(t, 1, runs.total())
	assert.Equal(t, 1, res.Metrics.ModelCalls)

	d.send(t, a, &braidv1.AgentSnapshotRequest{})
	snap, ok := d.next(t).(*braidv1.AgentSnapshot)
	require.True(t, ok)
	var s agent.Snapshot
	require.NoError(t, json.Unmarshal(snap.GetSnapshot(), &s))
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(s.Messages))
	d.none(t)
}

// SPEC R2, I7: the rejections of I7 come back over protobuf as errors that
// errors.Is and errors.As still match, naming the offending id, and
// nothing changes.
func TestAgentActor_RejectionsSurviveTheWire(t *testing.T) {
	sys := actorstest.System(t)
	a, _ := approvalAgent(t, sys, memory.New(), nil, nil)
	d := newDriver(t, sys)

	d.send(t, a, wireResume("nope", "y"))
	err := asError(t, d.next(t))
	assert.ErrorIs(t, err, interrupt.ErrNotInterrupted, "responses while not interrupted")

	d.send(t, a, &braidv1.AgentInvoke{Input: &braidv1.AgentInput{Resume: true}})
	assert.ErrorIs(t, asError(t, d.next(t)), interrupt.ErrNotInterrupted, "Resume() while not interrupted")

	d.send(t, a, wirePrompt(t, "delete a"))
	res := asResult(t, d.next(t))
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	before := agenttest.Snapshot(t, a)

	d.send(t, a, wirePrompt(t, "something else"))
	err = asError(t, d.next(t))
	assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
	var ce *interrupt.ContentError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{"text"}, ce.Types)

	d.send(t, a, wireResume("v1:unknown", "y"))
	err = asError(t, d.next(t))
	assert.ErrorIs(t, err, interrupt.ErrUnknownID)
	var ie *interrupt.IDError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "v1:unknown", ie.ID)
	assert.Contains(t, err.Error(), "interrupt_id=<v1:unknown>")

	mixed := wireResume(res.Interrupts[0].ID, "y")
	mixed.Input.Messages = wirePrompt(t, "and this").GetInput().GetMessages()
	d.send(t, a, mixed)
	assert.ErrorIs(t, asError(t, d.next(t)), interrupt.ErrMixedInput)

	d.send(t, a, &braidv1.AgentInvoke{Input: &braidv1.AgentInput{Messages: [][]byte{[]byte(`{"role":"system","content":[{"text":"x"}]}`)}}})
	assert.ErrorIs(t, asError(t, d.next(t)), agent.ErrBadInput, "a message of another role")
	d.send(t, a, &braidv1.AgentInvoke{Input: &braidv1.AgentInput{Messages: [][]byte{[]byte(`{"role":`)}}})
	assert.ErrorIs(t, asError(t, d.next(t)), agent.ErrBadInput, "a message that is not JSON")

	assert.Equal(t, before, agenttest.Snapshot(t, a), "nothing changed")
	d.send(t, a, wireResume(res.Interrupts[0].ID, "y"))
	assert.Equal(t, agent.StopEndTurn, asResult(t, d.next(t)).StopReason)
}

// failingModel fails every call with err.
type failingModel struct{ err error }

func (m failingModel) Stream(context.Context, *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) { yield(nil, m.err) }
}

// SPEC R2: an invocation that fails with a sentinel of a lower package (a
// model's rate limit, a broken tool executor) fails a protobuf caller with
// an error that still matches it.
func TestAgentActor_FailuresOfLowerPackagesSurviveTheWire(t *testing.T) {
	for _, sentinel := range []error{model.ErrRateLimited, model.ErrContextWindow, tool.ErrExecutor, persistence.ErrTooLarge} {
		t.Run(sentinel.Error(), func(t *testing.T) {
			sys := actorstest.System(t)
			a := newAgent(t, agent.Config{System: sys, Model: failingModel{err: fmt.Errorf("provider said no: %w", sentinel)}})
			d := newDriver(t, sys)
			d.send(t, a, wirePrompt(t, "hi"))
			err := asError(t, d.next(t))
			assert.ErrorIs(t, err, sentinel)
		})
	}
}

// SPEC R3: while a tool blocks, the actor answers Cancel, Snapshot and
// Status at once: every reply comes before the tool returns. The snapshot
// is the last saved point (the cycle in flight, saved before the tool
// started); the cancelled invocation ends with stop reason cancelled once
// the tool returns, its result kept.
func TestAgentActor_AnswersWhileAToolBlocks(t *testing.T) {
	sys := actorstest.System(t)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	a, runs := approvalAgent(t, sys, memory.New(), release, started)
	d := newDriver(t, sys)
	res, err := a.Invoke(context.Background(), agent.Text("delete a"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)

	d.send(t, a, wireResume(res.Interrupts[0].ID, "y"))
	<-started // the tool runs, and waits for release

	d.send(t, a, &braidv1.AgentStatusRequest{})
	st, ok := d.next(t).(*braidv1.AgentStatus)
	require.True(t, ok)
	assert.Equal(t, braidv1.AgentState_AGENT_STATE_RUNNING, st.GetState())

	d.send(t, a, &braidv1.AgentSnapshotRequest{})
	snapW, ok := d.next(t).(*braidv1.AgentSnapshot)
	require.True(t, ok)
	var snap agent.Snapshot
	require.NoError(t, json.Unmarshal(snapW.GetSnapshot(), &snap))
	require.NotNil(t, snap.Pending, "the cycle in flight, as saved")
	assert.Equal(t, agent.PendingTools, snap.Pending.Kind)
	assert.Equal(t, []string{"user:text"}, describeAll(snap.Messages))

	d.send(t, a, &braidv1.AgentCancel{})
	c, ok := d.next(t).(*braidv1.AgentCancelled)
	require.True(t, ok)
	assert.True(t, c.GetWasRunning(), "answered while the tool still blocks")
	d.none(t)

	close(release)
	res = asResult(t, d.next(t))
	assert.Equal(t, agent.StopCancelled, res.StopReason)
	assert.Equal(t, 1, runs.total())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs), "the finished tool's result is kept, then the cancel is said (SPEC A3)")
}

// SPEC R2, A10, I9: a streamed invocation over protobuf sends its events,
// then the result; the interrupt event is sent only once the interrupt is
// in the store.
func TestAgentActor_StreamOverProtobuf(t *testing.T) {
	sys := actorstest.System(t)
	store := memory.New()
	a, _ := approvalAgent(t, sys, store, nil, nil)
	d := newDriver(t, sys)
	inv := wirePrompt(t, "delete a")
	inv.Stream = true
	d.send(t, a, inv)
	var kinds []string
	for {
		m := d.next(t)
		if w, ok := m.(*braidv1.AgentEvent); ok {
			ev, err := agent.EventFromWire(w)
			require.NoError(t, err)
			kinds = append(kinds, fmt.Sprintf("%T", ev))
			if ie, ok := ev.(*agent.InterruptEvent); ok {
				exp, err := export.Read(context.Background(), store, "s1")
				require.NoError(t, err)
				b, err := json.Marshal(exp)
				require.NoError(t, err)
				assert.Contains(t, string(b), ie.Interrupt.ID, "SPEC I9: saved before the event")
			}
			continue
		}
		res := asResult(t, m)
		assert.Equal(t, agent.StopInterrupt, res.StopReason)
		break
	}
	assert.Equal(t, []string{"*agent.MessageEvent", "*agent.ToolUseEvent", "*agent.InterruptEvent"}, kinds)
}

// SPEC R7: hooks and tools read their own agent without deadlock: through
// the view (messages, state, snapshot, the answers being given) and
// through the handle's Snapshot and Status, which the actor answers while
// the invocation runs; asking the agent for more work from inside is a
// clear error. BeforeInvocation on a resume sees the answers.
func TestAgentActor_HooksReadTheirOwnAgentWithoutDeadlock(t *testing.T) {
	var a *agent.Agent
	var answering []interrupt.Response
	var seen []string
	readBack := hook.Func(func(ctx context.Context, ev *agent.BeforeToolCallEvent) error {
		seen = append(seen, fmt.Sprintf("view:%d", len(ev.Agent.Messages())))
		assert.NotNil(t, ev.Agent.Snapshot())
		s, err := a.Snapshot(ctx)
		if err != nil {
			return err
		}
		seen = append(seen, fmt.Sprintf("handle:%d", len(s.Messages)))
		st, err := a.Status(ctx)
		if err != nil {
			return err
		}
		seen = append(seen, string(st.State))
		_, err = a.Invoke(ctx, agent.Text("again"))
		assert.ErrorIs(t, err, agent.ErrReentrant)
		assert.ErrorIs(t, a.SetState(ctx, "k", 1), agent.ErrReentrant)
		return nil
	})
	before := hook.Func(func(_ context.Context, ev *agent.BeforeInvocationEvent) error {
		answering = ev.Agent.Answering()
		return nil
	})
	a = newAgent(t, agent.Config{Hooks: []hook.Provider{readBack, before, approveHook("one", "approval")},
		Tools: []tool.Tool{okTool("one")}, Model: toolThenText("done", model.Call("t1", "one", nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Empty(t, answering)
	resp := interrupt.Respond(res.Interrupts[0].ID, "y")
	res, err = a.Invoke(ctx, agent.Resume(resp))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	require.Len(t, answering, 1)
	assert.Equal(t, resp.ID, answering[0].ID)
	// Without a session the actor's committed state is that of the end of
	// the last invocation: the first pass's handle sees no prompt yet.
	assert.Equal(t, []string{"view:1", "handle:0", "RUNNING", "view:1", "handle:1", "RUNNING"}, seen)
}

func okTool(name string) tool.Tool {
	return tool.New(name, "ok", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) { return name + " ok", nil })
}

// panicModel panics on its first call and then answers.
type panicModel struct {
	calls atomic.Int32
}

func (m *panicModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	if m.calls.Add(1) == 1 {
		panic("model boom")
	}
	return model.Scripted(model.TextTurn("fine")).Stream(ctx, req)
}

// SPEC R6: a model, hook or tool that panics fails that step with an error
// carrying the panic value (a tool's panic is its error result, A13); the
// actor lives on with its state as before the step, and the next
// invocation works.
func TestAgentActor_PanicsAreContained(t *testing.T) {
	ctx := context.Background()
	t.Run("model", func(t *testing.T) {
		a := newAgent(t, agent.Config{Model: &panicModel{}})
		_, err := a.Invoke(ctx, agent.Text("hi"))
		require.ErrorIs(t, err, agent.ErrPanic)
		assert.Contains(t, err.Error(), "model boom")
		assert.Empty(t, agenttest.Messages(t, a), "as before the step: the prompt taken back")
		res, err := a.Invoke(ctx, agent.Text("hi"))
		require.NoError(t, err)
		assert.Equal(t, "fine", res.Message.Text())
		assert.Equal(t, []string{"user:text", "assistant:text"}, describeAll(agenttest.Messages(t, a)))
	})
	t.Run("hook", func(t *testing.T) {
		var boom atomic.Bool
		boom.Store(true)
		h := hook.Func(func(_ context.Context, ev *agent.BeforeModelCallEvent) error {
			if boom.Swap(false) {
				panic("hook boom")
			}
			return nil
		})
		a := newAgent(t, agent.Config{Model: model.Scripted(model.TextTurn("fine")), Hooks: []hook.Provider{h}})
		require.NoError(t, a.SetState(ctx, "kept", true))
		_, err := a.Invoke(ctx, agent.Text("hi"))
		var pe *hook.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Contains(t, err.Error(), "hook boom")
		assert.Empty(t, agenttest.Messages(t, a))
		v, ok := agenttest.State(t, a).Get("kept")
		assert.True(t, ok)
		assert.JSONEq(t, "true", string(v))
		res, err := a.Invoke(ctx, agent.Text("hi"))
		require.NoError(t, err)
		assert.Equal(t, "fine", res.Message.Text())
	})
	t.Run("tool", func(t *testing.T) {
		bad := tool.New("bad", "panics", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) { panic("tool boom") })
		a := newAgent(t, agent.Config{Tools: []tool.Tool{bad}, Model: toolThenText("done", model.Call("t1", "bad", nil))})
		res, err := a.Invoke(ctx, agent.Text("hi"))
		require.NoError(t, err)
		assert.Equal(t, "done", res.Message.Text())
		rs := bhResults(t, agenttest.Messages(t, a))
		require.Len(t, rs, 1)
		assert.Equal(t, model.ToolError, rs[0].Status)
		assert.Contains(t, rs[0].Text(), "tool boom")
	})
}

// SPEC R4: an agent with a session and an IdleTimeout is passivated while it
// waits for an answer, and the resume re-activates it from the store and
// completes; without the timeout it stays live.
func TestAgentActor_PassivatedMidInterruptResumesFromTheStore(t *testing.T) {
	events := make(chan actors.Lifecycle, 16)
	sys, err := actors.NewSystem(actors.Config{Observer: func(_ actors.Identity, l actors.Lifecycle) { events <- l }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	store := memory.New()
	sm, err := persistence.NewSessionManager(store, "idle")
	require.NoError(t, err)
	runs := &counter{}
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc(tc.ToolUse.ToolUseID)
		return "deleted", nil
	})
	initialized := 0
	a := newAgent(t, agent.Config{System: sys, Session: sm, IdleTimeout: 10 * time.Millisecond, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "approval"), hook.Func(func(context.Context, *agent.AgentInitializedEvent) error {
			initialized++
			return nil
		})},
		Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}))})
	// New activates the agent (it checks the session); waiting for that
	// activation to passivate first keeps the events of the interrupt apart
	// from it, however late the Invoke comes.
	require.Equal(t, actors.Activated, waitLifecycle(t, events))
	require.Equal(t, actors.Passivated, waitLifecycle(t, events))
	res, err := a.Invoke(context.Background(), agent.Text("delete a"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Equal(t, actors.Activated, waitLifecycle(t, events))
	require.Equal(t, actors.Passivated, waitLifecycle(t, events))
	live, err := a.Binding().Live(context.Background())
	require.NoError(t, err)
	assert.False(t, live)

	res, err = a.Invoke(context.Background(), agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, actors.Activated, waitLifecycle(t, events))
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
	assert.Equal(t, 3, initialized, "AgentInitialized fires on every activation (New's, the interrupt's, the resume's)")
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(agenttest.Messages(t, a)))
}

// waitLifecycle returns the next lifecycle event. The time limit only turns
// a hang into a failure.
func waitLifecycle(t *testing.T, events <-chan actors.Lifecycle) actors.Lifecycle {
	t.Helper()
	select {
	case l := <-events:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no lifecycle event")
		return 0
	}
}

// SPEC R4: 10,000 agents with sessions, each interrupted, are all
// passivated by their idle timeout (nothing of them stays live), and each
// resumes correctly on its next message, re-activated from the store.
func TestAgentActor_TenThousandAgentsPassivateAndResume(t *testing.T) {
	const n = 10000
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	store := memory.New()
	ctx := context.Background()
	runs := &counter{}
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc(tc.IdempotencyKey())
		return "deleted " + in.Paths[0], nil
	})
	model := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("done: " + rs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("t1", "delete_files", pathsIn{Paths: []string{last.Text()}})), nil
	})
	agents := make([]*agent.Agent, n)
	ids := make([]string, n)
	inParallel(t, n, func(i int) error {
		sm, err := persistence.NewSessionManager(store, fmt.Sprintf("s%05d", i))
		if err != nil {
			return err
		}
		a, err := agent.New(ctx, agent.Config{System: sys, Session: sm, IdleTimeout: 20 * time.Millisecond, Model: model,
			Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "approval")}})
		if err != nil {
			return err
		}
		res, err := a.Invoke(ctx, agent.Text(fmt.Sprintf("f%d", i)))
		if err != nil {
			return err
		}
		if res.StopReason != agent.StopInterrupt {
			return fmt.Errorf("agent %d: stop reason %s", i, res.StopReason)
		}
		agents[i], ids[i] = a, res.Interrupts[0].ID
		return nil
	})
	// Nothing sends to the agents any more: once none is live, every one
	// was passivated (some twice: New activates an agent, and under load
	// its idle timeout can end before the Invoke comes).
	lc.AwaitNoneLive(t)
	for i := 0; i < n; i += 997 {
		live, err := agents[i].Binding().Live(ctx)
		require.NoError(t, err)
		require.False(t, live)
	}
	inParallel(t, n, func(i int) error {
		res, err := agents[i].Invoke(ctx, agent.Resume(interrupt.Respond(ids[i], "y")))
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("done: deleted f%d", i); res.Message.Text() != want {
			return fmt.Errorf("agent %d: answered %q, want %q", i, res.Message.Text(), want)
		}
		return agents[i].Close(ctx)
	})
	assert.Equal(t, n, runs.total())
	for i := range n {
		require.Equal(t, 1, runs.get(fmt.Sprintf("s%05d/default/t1", i)), "agent %d ran its tool once", i)
	}
}

// inParallel runs f(0..n-1) on a few goroutines and fails the test with the
// first error.
func inParallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	const workers = 4
	errs := make(chan error, workers)
	var next atomic.Int64
	for range workers {
		go func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					errs <- nil
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
}

// SPEC R4: a passivated agent's identity is re-activated from the store by
// a new registry (a fresh actor system, as in another process) and the
// resume completes there.
func TestAgentActor_PassivatedAgentResumesInAFreshRegistry(t *testing.T) {
	store := memory.New()
	passivated := make(chan struct{}, 1)
	sys1, err := actors.NewSystem(actors.Config{Observer: func(_ actors.Identity, l actors.Lifecycle) {
		if l == actors.Passivated {
			passivated <- struct{}{}
		}
	}})
	require.NoError(t, err)
	a1, runs := approvalAgentIdle(t, sys1, store)
	<-passivated // New's activation (it checks the session)
	res, err := a1.Invoke(context.Background(), agent.Text("delete a"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	<-passivated // the interrupted agent's
	live, err := a1.Binding().Live(context.Background())
	require.NoError(t, err)
	require.False(t, live)
	require.NoError(t, sys1.Close(context.Background()))

	a2, _ := approvalAgent(t, actorstest.System(t), store, nil, nil)
	assert.True(t, agenttest.Interrupted(t, a2))
	res, err = a2.Invoke(context.Background(), agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 0, runs.total(), "the first runtime's tool never ran")
}

func approvalAgentIdle(t *testing.T, sys *actors.System, store persistence.Store) (*agent.Agent, *counter) {
	t.Helper()
	runs := &counter{}
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc(tc.ToolUse.ToolUseID)
		return "deleted", nil
	})
	sm, err := persistence.NewSessionManager(store, "s1")
	require.NoError(t, err)
	a, err := agent.New(context.Background(), agent.Config{System: sys, Session: sm, IdleTimeout: 5 * time.Millisecond, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "approval")},
		Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}))})
	require.NoError(t, err)
	return a, runs
}

// SPEC I2: an agent given an owner path raises ids that carry it, so two
// agents whose tools raise the same inner id do not collide; without one
// the ids are Strands Python's v1 forms.
func TestAgentActor_OwnerPathPrefixesInterruptIDs(t *testing.T) {
	ctx := context.Background()
	mk := func(path string) *agent.Agent {
		return newAgent(t, agent.Config{OwnerPath: path, Hooks: []hook.Provider{approveHook("one", "approval")},
			Tools: []tool.Tool{okTool("one")}, Model: toolThenText("done", model.Call("t1", "one", nil))})
	}
	plain, _ := mk("").Invoke(ctx, agent.Text("go"))
	x, _ := mk("graph/x").Invoke(ctx, agent.Text("go"))
	y, _ := mk("graph/y").Invoke(ctx, agent.Text("go"))
	v1 := interrupt.BeforeToolCallID("t1", "approval")
	assert.Equal(t, v1, plain.Interrupts[0].ID)
	assert.Equal(t, "graph/x/"+v1, x.Interrupts[0].ID)
	assert.Equal(t, "graph/y/"+v1, y.Interrupts[0].ID)
	path, own := interrupt.SplitOwner(x.Interrupts[0].ID)
	assert.Equal(t, "graph/x", path)
	assert.Equal(t, v1, own)

	_, err := agent.New(ctx, agent.Config{OwnerPath: "bad:path", Model: model.Scripted()})
	assert.ErrorIs(t, err, agent.ErrConfig)
	assert.ErrorIs(t, err, interrupt.ErrOwnerPath)
}

// SPEC R5: every ask takes the caller's context: an invocation whose
// context ends returns the context's error at once, even while a tool
// blocks; the actor stops the invocation when the tool returns, and the
// next invocation runs.
func TestAgentActor_CallerContextEndsTheWait(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	blocker := tool.New("block", "blocks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-release
		return "ok", nil
	})
	a := newAgent(t, agent.Config{Tools: []tool.Tool{blocker}, Model: toolThenText("done", model.Call("t1", "block", nil))})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Text("go"))
		errc <- err
	}()
	<-started
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled, "returned while the tool still blocks")
	_, err := a.Snapshot(ctx)
	assert.ErrorIs(t, err, context.Canceled, "an ask with an ended context")
	close(release)
	res, err := a.Invoke(context.Background(), agent.Text("again"))
	require.NoError(t, err)
	assert.Equal(t, "done", res.Message.Text())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC R4: an agent without a session cannot be given an IdleTimeout (it
// would lose its state), and a closed agent refuses work with ErrClosed.
func TestAgentActor_ConfigAndClose(t *testing.T) {
	ctx := context.Background()
	_, err := agent.New(ctx, agent.Config{Model: model.Scripted(), IdleTimeout: time.Second})
	assert.ErrorIs(t, err, agent.ErrConfig)
	a, err := agent.New(ctx, agent.Config{Model: model.Scripted(model.TextTurn("x"))})
	require.NoError(t, err)
	require.NoError(t, a.Close(ctx))
	require.NoError(t, a.Close(ctx), "twice is a no-op")
	_, err = a.Invoke(ctx, agent.Text("hi"))
	assert.ErrorIs(t, err, agent.ErrClosed)
	_, err = a.Snapshot(ctx)
	assert.True(t, errors.Is(err, agent.ErrClosed))
}

// SPEC R3, R5: a caller whose context cannot end lends its goroutine to
// the job it waits for; the actor still answers Status, Snapshot and
// Cancel while the job's tool blocks, and queues the next request behind
// it.
func TestAgentActor_AnswersWhileALentJobBlocks(t *testing.T) {
	sys := actorstest.System(t)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	a, runs := approvalAgent(t, sys, memory.New(), release, started)
	bg := context.Background() // no Done channel: the call runs its job itself
	res, err := a.Invoke(bg, agent.Text("delete a"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)

	resumed := make(chan *agent.Result, 1)
	go func() {
		r, err := a.Invoke(bg, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
		assert.NoError(t, err)
		resumed <- r
	}()
	<-started // the tool runs on the resuming caller's goroutine, and waits
	queued := make(chan error, 1)
	go func() { queued <- a.SetState(bg, "after", true) }()

	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	require.Eventually(t, func() bool {
		st, err := a.Status(ctx)
		return err == nil && st.State == agent.ActivityRunning && st.Queued == 1
	}, time.Minute, time.Millisecond, "the SetState queues behind the running job")
	snap, err := a.Snapshot(ctx)
	require.NoError(t, err)
	require.NotNil(t, snap.Pending, "the cycle in flight")
	was, err := a.Cancel(ctx)
	require.NoError(t, err)
	assert.True(t, was, "answered while the tool still blocks")
	select {
	case <-resumed:
		t.Fatal("the invocation ended before its tool returned")
	case <-queued:
		t.Fatal("the queued request ran before the job ended")
	default:
	}

	close(release)
	r := <-resumed
	assert.Equal(t, agent.StopCancelled, r.StopReason)
	require.NoError(t, <-queued)
	assert.Equal(t, 1, runs.total())
	v, ok := agenttest.State(t, a).Get("after")
	assert.True(t, ok)
	assert.JSONEq(t, "true", string(v))
}

// Status says what the agent does in the agent's own terms: idle before a
// run, interrupted while it waits for answers, idle once resumed.
func TestStatus_TellsIdleInterruptedIdle(t *testing.T) {
	ctx := context.Background()
	a, _ := approvalAgent(t, actorstest.System(t), memory.New(), nil, nil)
	st, err := a.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.ActivityIdle, st.State)

	res, err := a.Invoke(ctx, agent.Text("delete a"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	st, err = a.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.ActivityInterrupted, st.State)
	assert.True(t, st.Interrupted())
	assert.False(t, st.Incomplete())
	require.Len(t, st.Interrupts, 1)

	_, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	st, err = a.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.ActivityIdle, st.State)
	assert.Empty(t, st.Interrupts)
}

// SPEC R4, R5: an agent whose session fails to load on activation answers
// every call with the load's error and stops, so that the next call loads
// again; calls made while it stops are answered too (by it, or by the next
// activation), none is lost. Here the load fails after a passivation:
// concurrent calls all end, and once the store is back the agent works.
func TestAgentActor_FailedLoadAnswersEveryCallAndTheNextActivationLoadsAgain(t *testing.T) {
	events := make(chan actors.Lifecycle, 1024)
	sys, err := actors.NewSystem(actors.Config{Observer: func(_ actors.Identity, l actors.Lifecycle) { events <- l }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	store := persistencetest.NewFailingLoads()
	sm, err := persistence.NewSessionManager(store, "flaky")
	require.NoError(t, err)
	a := newAgent(t, agent.Config{System: sys, Session: sm, IdleTimeout: 10 * time.Millisecond,
		Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn("ok"), nil })})
	require.Equal(t, actors.Activated, waitLifecycle(t, events))
	require.Equal(t, actors.Passivated, waitLifecycle(t, events))

	store.Failing.Store(true)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.Status(context.Background()) // no deadline: a lost call hangs the test
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.Error(t, err)
		assert.Contains(t, err.Error(), persistencetest.ErrLoadsFail.Error(), "the error crossed the protobuf status reply: its text")
	}

	store.Failing.Store(false)
	res, err := a.Invoke(context.Background(), agent.Text("hi"))
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Message.Text())
}

// askInbox sends msg to a's actor with inbox as its sender and returns the
// reply, which must be a protobuf message that serializes. The time limit
// only turns a hang into a failure.
func askInbox(t *testing.T, a *agent.Agent, inbox *actors.Inbox, msg any) proto.Message {
	t.Helper()
	a.Binding().Request(msg, inbox)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := inbox.Receive(ctx)
	require.NoError(t, err, "a reply to %T", msg)
	pm, ok := rep.(proto.Message)
	require.True(t, ok, "reply %T to %T", rep, msg)
	_, err = proto.Marshal(pm)
	require.NoError(t, err, "reply %T to %T", rep, msg)
	return pm
}

// SPEC R2, R5, I7: a message the agent's actor does not take (another
// owner's protobuf message, a reply, a plain Go value) is answered to its
// sender with an Error that decodes to actors.ErrUnknownMessage, at once,
// whether the agent is idle, interrupted or running; without a sender it
// is dropped. Either way the agent is as it was and answers as before.
func TestAgentActor_AnswersAMessageItDoesNotTakeWithAnError(t *testing.T) {
	sys := actorstest.System(t)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	a, runs := approvalAgent(t, sys, memory.New(), release, started)
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	foreign := []any{&braidv1.MultiAgentInvoke{}, &braidv1.MultiAgentStatusRequest{}, &braidv1.NodeRun{}, &braidv1.NodeReport{},
		&braidv1.AgentResult{}, &braidv1.Error{}, "plain", 42, struct{}{}}
	check := func(phase string, state braidv1.AgentState) {
		t.Helper()
		before := agenttest.Snapshot(t, a)
		for _, m := range foreign {
			a.Binding().Send(m)
			err := asError(t, askInbox(t, a, inbox, m))
			assert.ErrorIs(t, err, actors.ErrUnknownMessage, "%s: %T", phase, m)
			assert.Contains(t, err.Error(), fmt.Sprintf("%T", m), "%s: the error names the message", phase)
		}
		st, ok := askInbox(t, a, inbox, &braidv1.AgentStatusRequest{}).(*braidv1.AgentStatus)
		require.True(t, ok, phase)
		assert.Equal(t, state, st.GetState(), phase)
		assert.Zero(t, st.GetQueued(), phase)
		assert.Equal(t, before, agenttest.Snapshot(t, a), "%s: nothing changed", phase)
	}

	check("idle", braidv1.AgentState_AGENT_STATE_IDLE)
	res := asResult(t, askInbox(t, a, inbox, wirePrompt(t, "delete a")))
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	check("interrupted", braidv1.AgentState_AGENT_STATE_INTERRUPTED)

	resumed := actors.NewInbox(sys)
	t.Cleanup(resumed.Close)
	a.Binding().Request(wireResume(res.Interrupts[0].ID, "y"), resumed)
	<-started // the tool runs, and waits for release
	check("running", braidv1.AgentState_AGENT_STATE_RUNNING)
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := resumed.Receive(ctx)
	require.NoError(t, err)
	pm, ok := rep.(proto.Message)
	require.True(t, ok, "%T", rep)
	assert.Equal(t, agent.StopEndTurn, asResult(t, pm).StopReason, "the invocation the messages came during is unharmed")
	assert.Equal(t, 1, runs.total())
}

// SPEC R2, R5, I7: every request of the agent's protocol sent with its
// fields zero, empty or not JSON, first without a sender and then with
// one, while the agent is idle and while it is interrupted: the one
// without a sender is dropped or runs without harm (the actor answers the
// next message), the one with a sender gets exactly one reply, a protobuf
// message that serializes (an Error decodes to the typed error), and
// whatever was refused left the agent as it was.
func TestAgentActor_ZeroValueRequestsAreAnsweredOnceAndChangeNothing(t *testing.T) {
	sys := actorstest.System(t)
	a, runs := approvalAgent(t, sys, memory.New(), nil, nil)
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	type want struct {
		reply proto.Message // the reply's type
		err   error         // for an Error, what it matches
	}
	notJSON := []byte(`{"role":`)
	check := func(phase string, state braidv1.AgentState, cases map[proto.Message]want) {
		t.Helper()
		before := agenttest.Snapshot(t, a)
		for msg, w := range cases {
			a.Binding().Send(msg)
			rep := askInbox(t, a, inbox, msg)
			require.IsType(t, w.reply, rep, "%s: %T %v", phase, msg, msg)
			if w.err != nil {
				assert.ErrorIs(t, asError(t, rep), w.err, "%s: %T %v: %v", phase, msg, msg, asError(t, rep))
			}
			// Exactly one reply: the next one is the status asked for now.
			st, ok := askInbox(t, a, inbox, &braidv1.AgentStatusRequest{}).(*braidv1.AgentStatus)
			require.True(t, ok, "%s: %T %v: one reply only", phase, msg, msg)
			assert.Equal(t, state, st.GetState(), "%s: %T %v", phase, msg, msg)
		}
		assert.Equal(t, before, agenttest.Snapshot(t, a), "%s: nothing changed", phase)
	}
	errReply := &braidv1.Error{}
	common := map[proto.Message]want{
		&braidv1.AgentInvoke{Input: &braidv1.AgentInput{Messages: [][]byte{nil}}}:                     {errReply, agent.ErrBadInput},
		&braidv1.AgentInvoke{Input: &braidv1.AgentInput{Messages: [][]byte{notJSON}}, Stream: true}:   {errReply, agent.ErrBadInput},
		&braidv1.AgentInvoke{Input: &braidv1.AgentInput{}, Values: map[string][]byte{"k": notJSON}}:   {errReply, agent.ErrBadInput},
		&braidv1.AgentInvoke{Input: &braidv1.AgentInput{Responses: []*braidv1.InterruptResponse{{}}}}: {errReply, nil},
		&braidv1.AgentSetMessages{Messages: [][]byte{nil}}:                                            {errReply, agent.ErrBadInput},
		&braidv1.AgentSetMessages{Messages: [][]byte{notJSON}}:                                        {errReply, agent.ErrBadInput},
		&braidv1.AgentCallTool{}:                         {errReply, agent.ErrUnknownTool},
		&braidv1.AgentSetState{}:                         {errReply, agent.ErrBadInput},
		&braidv1.AgentSetState{Key: "k"}:                 {errReply, agent.ErrBadInput},
		&braidv1.AgentSetState{Key: "k", Value: notJSON}: {errReply, agent.ErrBadInput},
		&braidv1.AgentSetState{Delete: true}:             {&braidv1.AgentDone{}, nil},
		&braidv1.AgentCancel{}:                           {&braidv1.AgentCancelled{}, nil},
		&braidv1.AgentCancel{Reason: braidv1.CancelReason(99), InvocationId: "none"}: {&braidv1.AgentCancelled{}, nil},
		&braidv1.AgentSnapshotRequest{}:                                              {&braidv1.AgentSnapshot{}, nil},
		&braidv1.AgentStatusRequest{}:                                                {&braidv1.AgentStatus{}, nil},
	}
	idle := map[proto.Message]want{
		&braidv1.AgentInvoke{}:                                         {errReply, agent.ErrEmptyInput},
		&braidv1.AgentInvoke{Stream: true}:                             {errReply, agent.ErrEmptyInput},
		&braidv1.AgentInvoke{Input: &braidv1.AgentInput{Resume: true}}: {errReply, interrupt.ErrNotInterrupted},
		&braidv1.AgentSetMessages{}:                                    {&braidv1.AgentDone{}, nil}, // the history is empty already
	}
	interrupted := map[proto.Message]want{
		&braidv1.AgentInvoke{}:                                            {errReply, interrupt.ErrResumeRequired},
		&braidv1.AgentInvoke{Stream: true}:                                {errReply, interrupt.ErrResumeRequired},
		&braidv1.AgentInvoke{Input: &braidv1.AgentInput{Resume: true}}:    {errReply, interrupt.ErrResumeRequired},
		&braidv1.AgentSetMessages{}:                                       {errReply, agent.ErrInterruptedReset},
		&braidv1.AgentCallTool{Name: "delete_files", Input: []byte(`{}`)}: {errReply, agent.ErrInterruptedDirect},
	}
	for m, w := range common {
		idle[m], interrupted[m] = w, w
	}

	check("idle", braidv1.AgentState_AGENT_STATE_IDLE, idle)
	res := asResult(t, askInbox(t, a, inbox, wirePrompt(t, "delete a")))
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	check("interrupted", braidv1.AgentState_AGENT_STATE_INTERRUPTED, interrupted)
	res = asResult(t, askInbox(t, a, inbox, wireResume(res.Interrupts[0].ID, "y")))
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
}
