package swarm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
)

// SPEC S4, M10: two runtimes (two processes) built the same swarm of one
// session before anything ran; in the first, b's agent stops for an
// answer. The second, holding the empty run it loaded, is given the
// answer: instead of refusing it as "not interrupted" for ever, the call
// fails with ErrConflict (nothing runs) and the swarm takes the stored
// run, so the retry resumes b's agent (stale too, it takes its stored
// state) and the swarm ends. The answered tool runs exactly once.
func TestSwarmSession_S4_AStaleSwarmRefusingAResumeTakesTheStoredRunSoTheRetryProceeds(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	cfg := func() swarm.Config {
		return swarm.Config{Session: manager(t, st, "shared"), System: actorstest.System(t)}
	}
	s1, s2 := build(t, researchSwarm(r), cfg()), build(t, researchSwarm(r), cfg())
	res, err := s1.Invoke(ctx, agent.Text("find the answer"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID

	_, err = s2.Invoke(ctx, agent.Resume(interrupt.Respond(id, "42")))
	require.ErrorIs(t, err, persistence.ErrConflict)
	assert.NotErrorIs(t, err, interrupt.ErrNotInterrupted)
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, persistence.KindMultiAgent, ce.Key.Kind)
	assert.Equal(t, int64(0), ce.Expected)
	assert.Equal(t, 0, r.count("tool:b"))

	res, err = s2.Invoke(ctx, agent.Resume(interrupt.Respond(id, "42")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)

	_, err = s1.Invoke(ctx, agent.Resume(interrupt.Respond(id, "42")))
	require.ErrorIs(t, err, persistence.ErrConflict, "the first runtime is the stale one now")
	_, err = s1.Invoke(ctx, agent.Resume(interrupt.Respond(id, "42")))
	require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
	assert.NotErrorIs(t, err, persistence.ErrConflict)
	assert.Equal(t, 1, r.count("tool:b"), "the answered tool ran exactly once")
	assert.Equal(t, 1, r.count("model:c"), "the node after the handoff ran once")
}

// SPEC S4, M10: two runtimes built the same swarm of one session before
// anything ran; the first runs it to the end. The second, whose run and
// agents are the empty ones they loaded, is given a prompt: its launch
// save fails with ErrConflict and the swarm takes the stored run. The
// retry runs: the entry agent, stale like the run was, takes its stored
// history rather than failing the node on its prompt's save.
func TestSwarmSession_S4_AStaleSwarmsRetriedPromptRunsOnItsAgentsStoredHistories(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	cfg := func() swarm.Config {
		return swarm.Config{Session: manager(t, st, "shared"), System: actorstest.System(t)}
	}
	s1, s2 := build(t, researchSwarm(r), cfg()), build(t, researchSwarm(r), cfg())
	res, err := s1.Invoke(ctx, agent.Text("find the answer"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	res, err = s1.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "42")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)

	_, err = s2.Invoke(ctx, agent.Text("find it again"))
	require.ErrorIs(t, err, persistence.ErrConflict)
	res, err = s2.Invoke(ctx, agent.Text("find it again"))
	require.NoError(t, err, "the retried prompt runs on the stored run")
	assert.Equal(t, multiagent.StatusInterrupted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("tool:b"))
}
