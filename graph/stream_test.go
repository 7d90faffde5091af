package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

func describe(ev multiagent.Event) string {
	switch e := ev.(type) {
	case *multiagent.NodeStartEvent:
		return "start " + e.Node
	case *multiagent.NodeEvent:
		if m, ok := e.Event.(*agent.MessageEvent); ok {
			return fmt.Sprintf("message %s %s", e.Node, m.Message.Role)
		}
		return fmt.Sprintf("event %s %T", e.Node, e.Event)
	case *multiagent.NodeStopEvent:
		return fmt.Sprintf("stop %s %s", e.Node, e.Result.Status)
	case *multiagent.InterruptEvent:
		return "interrupt " + e.Node
	case *multiagent.ResultEvent:
		return "result " + string(e.Result.Status)
	}
	return fmt.Sprintf("%T", ev)
}

// SPEC M12: Stream yields node starts, the node agents' events tagged with
// the node path, node results, the interrupts (after the save) and the
// result; a gated node has no start.
func TestGraphStream_YieldsNodeEventsThenInterruptsThenResult(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	st := memory.New()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s"), Hooks: []hook.Provider{gate(r, "b")}})
	var got []string
	var in interrupt.Interrupt
	for ev, err := range g.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		got = append(got, describe(ev))
		if e, ok := ev.(*multiagent.InterruptEvent); ok {
			in = e.Interrupt
			rec, err := st.Load(ctx, persistence.Key{SessionID: "s", Kind: persistence.KindMultiAgent, ID: "g"})
			require.NoError(t, err)
			saved := string(rec.Data)
			for _, m := range rec.Messages {
				saved += string(m)
			}
			assert.Contains(t, saved, in.ID, "the interrupt is saved before it is streamed (SPEC I9)")
		}
	}
	assert.Contains(t, got, "message g/a assistant")
	assert.Equal(t, []string{"start g/a"}, got[:1])
	assert.Equal(t, []string{"stop g/a COMPLETED", "stop g/b INTERRUPTED", "interrupt g/b", "result INTERRUPTED"}, got[len(got)-4:])
	assert.NotContains(t, got, "start g/b")

	got = nil
	for ev, err := range g.Stream(ctx, agent.Resume(interrupt.Respond(in.ID, "y"))) {
		require.NoError(t, err)
		got = append(got, describe(ev))
	}
	assert.Equal(t, "start g/b", got[0])
	assert.Equal(t, []string{"stop g/b COMPLETED", "result COMPLETED"}, got[len(got)-2:])
}

// SPEC M12: a consumer that stops reading at the first event leaves a run
// that a later resume finishes.
func TestGraphStream_ConsumerThatStopsEarlyLeavesAResumableRun(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "b")}})
	for ev, err := range g.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		_ = ev
		break
	}
	// The next call queues behind the unread run and sees its end.
	st, err := g.Invoke(ctx, agent.Text("again"))
	require.ErrorIs(t, err, interrupt.ErrResumeRequired, "the first run went on to its interrupt")
	assert.Nil(t, st)
	res, err := g.Status(ctx)
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:a"))
	assert.Equal(t, 1, r.count("model:b"))
}
