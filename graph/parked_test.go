package graph_test

// A node's agent parks its durable saves for the orchestrator's commit
// (SPEC M10). These end-to-end cases pin that no parked save is lost or
// fails a later one: a timed-out node's late take-back, and the history
// reset of a ResetOnRevisit node.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// storedMessages reads the messages of agent record id from st.
func storedMessages(t *testing.T, st persistence.Store, session, id string) []model.Message {
	t.Helper()
	m, err := persistence.NewSessionManager(st, session)
	require.NoError(t, err)
	_, rec, err := m.OpenAgent(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, rec)
	return rec.Messages
}

func messageTexts(msgs []model.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ":" + m.Text()
	}
	return out
}

// signalStore signals saved at the first save, once armed, that changes
// a record as when says.
type signalStore struct {
	persistence.Store
	when  func(persistence.Change) bool
	armed atomic.Bool
	saved chan struct{}
}

func (s *signalStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	v, err := s.Store.Save(ctx, opts, changes...)
	for _, c := range changes {
		if err == nil && s.when(c) && s.armed.CompareAndSwap(true, false) {
			s.saved <- struct{}{}
		}
	}
	return v, err
}

// SPEC A3, M10: NodeTimeout cuts a node's agent off in its model call; the
// agent stops later and takes its prompt back, after its node handed the
// orchestrator its save. The take-back is not lost: whether the agent
// stopped before the next run ("stopped") or the next run waits for it
// ("stopping"), the store holds the history the agent answered.
func TestGraph_TimedOutNodesStoredHistoryIsWhatWasAnswered(t *testing.T) {
	for _, name := range []string{"stopped", "stopping"} {
		t.Run(name, func(t *testing.T) {
			// The timeout must cut the model call off: on a loaded machine
			// it may come before the call begins, and the attempt shows
			// nothing; it is made again, with a longer timeout.
			for _, timeout := range []time.Duration{20 * time.Millisecond, 200 * time.Millisecond, time.Second} {
				if timedOutInTheModelCall(t, name, timeout) {
					return
				}
			}
			t.Fatal("the node timed out before its model call in every attempt")
		})
	}
}

// timedOutInTheModelCall runs TestGraph_TimedOutNodesStoredHistoryIsWhatWasAnswered's
// case name with a node timeout; false: the timeout came before the
// model call, or cut the second run off too, and the attempt shows nothing.
func timedOutInTheModelCall(t *testing.T, name string, timeout time.Duration) bool {
	ctx := context.Background()
	entered := make(chan struct{}) // the cut-off model call began
	release := make(chan struct{}) // ends the cut-off model call
	var calls atomic.Int32
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		last, _ := req.LastMessage()
		return model.TextTurn("answer to " + last.Text()), nil
	})
	// the take-back: n's agent record rewritten to no messages
	takeBack := func(c persistence.Change) bool { return c.Key.ID == "g:n:n" && c.From == 0 && len(c.Messages) == 0 }
	st := &signalStore{Store: memory.New(), when: takeBack, saved: make(chan struct{}, 1)}
	sm := manager(t, st, "s")
	var runs atomic.Int32
	// "stopping": the second run's gate lets the cut-off call end,
	// so the agent takes its prompt back while that run starts.
	release2 := hook.Func(func(context.Context, *multiagent.BeforeNodeCallEvent) error {
		if runs.Add(1) == 2 && name == "stopping" {
			close(release)
		}
		return nil
	})
	b := graph.NewBuilder().AddNode("n", agentnode.Agent(agent.Config{Model: m}))
	g := build(t, b, graph.Config{ID: "g", Session: sm, NodeTimeout: timeout, Hooks: []hook.Provider{release2}})
	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	require.ErrorIs(t, res.Node("n").Err, actors.ErrNodeTimeout)
	select {
	case <-entered:
	default:
		close(release) // in case the call begins late
		require.NoError(t, g.Close(ctx))
		return false // timed out before the model call
	}
	if name == "stopped" {
		st.armed.Store(true)
		close(release)
		select { // the agent stopped and took its prompt back
		case <-st.saved:
		case <-time.After(10 * time.Second): // turns a hang into a failure
			t.Fatal("the agent's take-back was never saved")
		}
	}
	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	if n := res.Node("n"); n != nil && errors.Is(n.Err, actors.ErrNodeTimeout) {
		require.NoError(t, g.Close(ctx))
		return false // the second run took longer than the timeout: shows nothing either
	}
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	require.NoError(t, g.Close(ctx))
	assert.Equal(t, []string{"user:second", "assistant:answer to second"}, messageTexts(storedMessages(t, st.Store, "s", "g:n:n")))
	return true
}

// SPEC M8, M10: a ResetOnRevisit node with a session completes its
// revisit: the reset (a rewrite to the agent's initial history, parked)
// is carried by the revisit's first save, and the store holds the
// revisit's history only.
func TestGraph_ResetOnRevisitNodeWithASessionCompletesItsRevisit(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("loop", textAgent(r, "loop")).AddNode("back", fn(r, "back", nil)).
		AddEdge("loop", "back").
		AddEdge("back", "loop", func(s *graph.State) bool { return s.Result("loop").ExecutionCount < 2 }).
		SetEntryPoint("loop").ResetOnRevisit(true)
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s")})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, multiagent.StatusCompleted, res.Node("loop").Status)
	assert.Equal(t, 2, res.Node("loop").ExecutionCount)
	require.NoError(t, g.Close(ctx))
	stored := messageTexts(storedMessages(t, st, "s", "g:loop:loop"))
	require.Len(t, stored, 2, "the revisit's prompt and answer: %v", stored)
	assert.True(t, strings.Contains(stored[0], "back out"), "the revisit's prompt: %v", stored)
	assert.Equal(t, "assistant:loop done", stored[1])
}
