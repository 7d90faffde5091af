package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
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
	st := memory.New()
	r := newRecorder()
	mk := func() *graph.Builder {
		return graph.NewBuilder().AddNode("a", wrapped{toolAgent(r, "a", "work", "ask")})
	}
	g := build(t, mk(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
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

	g2 := build(t, mk(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
	res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "yes")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("tool:a"))
}

// pair is a node that runs two agents, one after the other, in each run
// (a worker and a reviewer, say), and returns the first one's result.
type pair struct{ first, second actors.Node }

func (p pair) OpenNode(ctx context.Context, env actors.NodeEnv) (actors.NodeRunner, error) {
	a, err := p.first.OpenNode(ctx, env)
	if err != nil {
		return nil, err
	}
	b, err := p.second.OpenNode(ctx, env)
	if err != nil {
		return nil, err
	}
	return pairRunner{a, b}, nil
}

type pairRunner struct{ first, second actors.NodeRunner }

func (p pairRunner) RunNode(ctx context.Context, run *braidv1.NodeRun) *braidv1.NodeResult {
	res := p.first.RunNode(ctx, run)
	p.second.RunNode(ctx, run)
	return res
}
func (p pairRunner) Progress(ctx context.Context) (int64, error) { return p.first.Progress(ctx) }
func (p pairRunner) Close(ctx context.Context) error {
	return errors.Join(p.first.Close(ctx), p.second.Close(ctx))
}

// SPEC M10: when one node run runs two agents, both agents' durable saves
// are committed with the graph's record: the first one's interrupt and
// the second one's answer are in the store when the graph reports.
func TestGraphSession_TwoAgentsInOneNodeRunBothSave(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	reviewer := agentnode.Agent(agent.Config{ID: "reviewer", Model: model.Scripted(model.TextTurn("reviewer done"))})
	g := build(t, graph.NewBuilder().AddNode("n", pair{toolAgent(r, "n", "work", "ask"), reviewer}),
		graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)

	m, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	_, rec, err := m.OpenAgent(ctx, actors.RecordID("g/n", "n"))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.True(t, rec.Interrupts.Activated(), "the first agent's interrupt is in the store")
	_, rec, err = m.OpenAgent(ctx, actors.RecordID("g/n", "reviewer"))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "reviewer done", rec.Messages[len(rec.Messages)-1].Text(), "the second agent's answer is in the store")
}

// detached is a node whose runner starts its inner runner on a goroutine
// of its own once released, and returns at once (as a wrapper that gives
// up on a slow executor would).
type detached struct {
	inner   actors.Node
	release chan struct{}
	done    chan struct{}
}

func (d detached) OpenNode(ctx context.Context, env actors.NodeEnv) (actors.NodeRunner, error) {
	r, err := d.inner.OpenNode(ctx, env)
	if err != nil {
		return nil, err
	}
	return detachedRunner{d, r}, nil
}

type detachedRunner struct {
	d     detached
	inner actors.NodeRunner
}

func (r detachedRunner) RunNode(ctx context.Context, run *braidv1.NodeRun) *braidv1.NodeResult {
	go func() {
		defer close(r.d.done)
		<-r.d.release
		r.inner.RunNode(context.WithoutCancel(ctx), run)
	}()
	return &braidv1.NodeResult{NodeId: run.GetNodeId(), Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED,
		Result: &braidv1.NodeResult_Content{Content: []byte(`[{"text":"started"}]`)}}
}
func (r detachedRunner) Progress(ctx context.Context) (int64, error) { return 0, nil }
func (r detachedRunner) Close(ctx context.Context) error             { return nil }

// SPEC M10: an executor that asks for the joint commit after its node's
// run has ended (its runner returned without waiting for it) is told no
// one will take its saves, and saves them on its own: its answer reaches
// the store.
func TestGraphSession_AnExecutorThatOutlivesItsRunSavesOnItsOwn(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	d := detached{inner: textAgent(r, "late"), release: make(chan struct{}), done: make(chan struct{})}
	g := build(t, graph.NewBuilder().AddNode("late", d), graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	close(d.release)
	<-d.done

	m, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	_, rec, err := m.OpenAgent(ctx, actors.RecordID("g/late", "late"))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "late done", rec.Messages[len(rec.Messages)-1].Text())
}
