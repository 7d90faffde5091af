package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC R5, M12: a Stream whose context ends stops yielding the run's
// events at once, even those already queued for it, and ends with the
// context's error; the run it leaves goes on, and a resume finishes it
// with no tool run twice.
func TestGraphStream_AContextThatEndsEndsTheStreamEvenWithEventsQueued(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", toolAgent(r, "a", "ta", "")).AddNode("b", toolAgent(r, "b", "tb", "ok")).AddEdge("a", "b")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, memory.New(), "s")})
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var after []string
	var errs []error
	first := true
	for ev, err := range g.Stream(sctx, agent.Text("go")) {
		if first {
			first = false
			// Queued behind the streamed run, this returns once that run
			// ended: every event of it is queued for the stream by now.
			_, qerr := g.Invoke(ctx, agent.Text("again"))
			require.ErrorIs(t, qerr, interrupt.ErrResumeRequired)
			cancel()
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		after = append(after, describe(ev))
	}
	assert.Empty(t, after, "events yielded after the stream's context ended")
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], context.Canceled)

	st, err := g.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Interrupts, 1)
	res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(st.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("tool:a"))
	assert.Equal(t, 1, r.count("tool:b"))
}
