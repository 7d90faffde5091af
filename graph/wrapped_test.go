package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// wrapped is a node whose runner wraps another's and forwards only the
// NodeRunner methods, as a logging or metrics wrapper would.
type wrapped struct{ inner actors.Node }

func (w wrapped) OpenNode(ctx context.Context, env actors.NodeEnv) (actors.NodeRunner, error) {
	r, err := w.inner.OpenNode(ctx, env)
	if err != nil {
		return nil, err
	}
	return wrappedRunner{r}, nil
}

type wrappedRunner struct{ inner actors.NodeRunner }

func (w wrappedRunner) RunNode(ctx context.Context, run *braidv1.NodeRun) *braidv1.NodeResult {
	return w.inner.RunNode(ctx, run)
}
func (w wrappedRunner) Progress(ctx context.Context) (int64, error) { return w.inner.Progress(ctx) }
func (w wrappedRunner) Close(ctx context.Context) error             { return w.inner.Close(ctx) }

// SPEC M10, S1: a node whose runner is wrapped by a runner that knows
// nothing of joint commits still has its agent's interrupt in the store
// when the graph reports it (the agent's save is committed with the
// graph's record, not left waiting for a take that never comes), and a
// fresh runtime resumes it; the tool runs once, after the answer.
func TestGraphSession_AWrappedAgentNodeSavesItsInterrupt(t *testing.T) {
	ctx := context.Background()
	st := persistence.NewMemoryStore()
	r := newRecorder()
	mk := func() *graph.Builder {
		return graph.NewBuilder().AddNode("a", wrapped{toolAgent(r, "a", "work", "ask")})
	}
	g := build(t, mk(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: freshSystem(t)})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)

	// What is in the store now is what a crash would leave.
	m, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	_, rec, err := m.OpenAgent(ctx, actors.RecordID("g/a", "a"))
	require.NoError(t, err)
	require.NotNil(t, rec)
	require.True(t, rec.Interrupts.Activated(), "the agent's interrupt is in the store")
	require.Len(t, rec.Interrupts.Unanswered(), 1)

	g2 := build(t, mk(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: freshSystem(t)})
	res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "yes")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("tool:a"))
}
