package agent_test

// SPEC A9, S1, S6: the usage of an invocation is every model call it
// made, counted once, across crashes: each save stores the usage counting
// the turns it stores, and an invocation carried on after a crash starts
// from it; a resume counts its own calls alone.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// exportingStore exports the session after every committed save: each
// export is what a crash right after that save leaves.
type exportingStore struct {
	*memory.Store
	mu      sync.Mutex
	exports []*export.Session
}

func (s *exportingStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.Store.Save(ctx, opts, changes...)
	if err == nil {
		exp, xerr := export.Read(ctx, s.Store, crashSession)
		if xerr != nil {
			return v, xerr
		}
		s.exports = append(s.exports, exp)
	}
	return v, err
}

// taken returns the exports made so far and forgets them.
func (s *exportingStore) taken() []*export.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.exports
	s.exports = nil
	return out
}

var oneCall = model.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}

// usageAgent builds, on a fresh actor system (a new process), an agent
// with a session in store whose model asks for the tool "work" while the
// last message is a prompt and answers text once its result is in, each
// call using oneCall; hooks are added to it.
func usageAgent(t *testing.T, store persistence.Store, hooks ...hook.Provider) *agent.Agent {
	t.Helper()
	m, err := persistence.NewSessionManager(store, crashSession)
	require.NoError(t, err)
	work := tool.New("work", "works", func(context.Context, *tool.Context, pathsIn) (string, error) { return "worked", nil })
	mdl := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.Turn{Text: "done", Usage: oneCall}, nil
		}
		return model.Turn{Calls: []model.ToolCall{model.Call("w1", "work", pathsIn{})}, Usage: oneCall}, nil
	})
	return newAgent(t, agent.Config{Model: mdl, Tools: []tool.Tool{work}, Hooks: hooks, Session: m, System: actorstest.System(t)})
}

// restored imports exp into a fresh store.
func restored(t *testing.T, exp *export.Session) persistence.Store {
	t.Helper()
	st := memory.New()
	require.NoError(t, export.Write(context.Background(), st, exp))
	return st
}

// SPEC A9, S6: an invocation cut off by a crash after any of its saves and
// carried on in a fresh runtime reports the usage of every model call it
// made, those before the crash whose turns were saved included, once: the
// uncrashed invocation's usage.
func TestInvoke_UsageOfARunCarriedOnAfterACrashCountsEachModelCallOnce(t *testing.T) {
	ctx := context.Background()
	store := &exportingStore{Store: memory.New()}
	a := usageAgent(t, store)
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	want := oneCall.Add(oneCall)
	require.Equal(t, want, res.Usage)
	require.NoError(t, a.Close(ctx))

	carried := 0
	for i, exp := range store.taken() {
		label := fmt.Sprintf("crash after save %d", i+1)
		b := usageAgent(t, restored(t, exp))
		st, err := b.Status(ctx)
		require.NoError(t, err, label)
		if !st.Incomplete() {
			// The invocation had ended: its record keeps its usage.
			snap, err := b.Snapshot(ctx)
			require.NoError(t, err, label)
			assert.Equal(t, want, snap.Usage, label)
			continue
		}
		carried++
		got, err := b.Invoke(ctx, agent.Input{})
		require.NoError(t, err, label)
		assert.Equal(t, agent.StopEndTurn, got.StopReason, label)
		assert.Equal(t, want, got.Usage, label)
		require.NoError(t, b.Close(ctx))
	}
	require.Greater(t, carried, 1, "crashes after the model's first turn was saved are carried on")
}

// SPEC A9, M7: a resume reports the usage of its own model calls, not
// those of the invocation it resumes, and so does a resume cut off by a
// crash after any of its saves and carried on in a fresh runtime.
func TestResume_UsageIsTheResumesOwnAlsoWhenCarriedOnAfterACrash(t *testing.T) {
	ctx := context.Background()
	store := &exportingStore{Store: memory.New()}
	a := usageAgent(t, store, approveHook("work", "approve"))
	first, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, first.StopReason)
	require.Equal(t, oneCall, first.Usage)
	answer := func(ins []interrupt.Interrupt) agent.Input {
		require.Len(t, ins, 1)
		return agent.Resume(respond(ins[0], "y"))
	}
	store.taken() // the first invocation's saves
	res, err := a.Invoke(ctx, answer(first.Interrupts))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	require.Equal(t, oneCall, res.Usage, "the resume's own model call")
	require.NoError(t, a.Close(ctx))

	carried := 0
	for i, exp := range store.taken() {
		label := fmt.Sprintf("crash after save %d of the resume", i+1)
		b := usageAgent(t, restored(t, exp), approveHook("work", "approve"))
		st, err := b.Status(ctx)
		require.NoError(t, err, label)
		var in agent.Input
		switch {
		case st.Incomplete():
			carried++
		case st.Interrupted():
			in = answer(st.Interrupts)
		default:
			continue
		}
		got, err := b.Invoke(ctx, in)
		require.NoError(t, err, label)
		assert.Equal(t, agent.StopEndTurn, got.StopReason, label)
		assert.Equal(t, oneCall, got.Usage, label)
		require.NoError(t, b.Close(ctx))
	}
	require.Positive(t, carried, "a resume cut off after its claim is carried on")
}

// SPEC A9: SetMessages ends the latest invocation: a history it gives that
// awaits the model is carried on counting from zero, not from the usage
// of the run it dropped.
func TestSetMessages_HistoryCarriedOnCountsItsOwnUsage(t *testing.T) {
	ctx := context.Background()
	store := &exportingStore{Store: memory.New()}
	a := usageAgent(t, store)
	_, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.NoError(t, a.Close(ctx))
	var cut *export.Session // the first turn saved, the run cut off
	for _, exp := range store.taken() {
		b := usageAgent(t, restored(t, exp))
		snap, err := b.Snapshot(ctx)
		require.NoError(t, err)
		if snap.Pending != nil && snap.Usage == oneCall {
			cut = exp
		}
		require.NoError(t, b.Close(ctx))
	}
	require.NotNil(t, cut, "a save stores the first turn with its usage")

	b := usageAgent(t, restored(t, cut))
	require.NoError(t, b.SetMessages(ctx, []model.Message{model.UserText("again")}, agent.DropUnfinished()))
	snap, err := b.Snapshot(ctx)
	require.NoError(t, err)
	assert.Zero(t, snap.Usage)
	res, err := b.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, oneCall.Add(oneCall), res.Usage)
}
