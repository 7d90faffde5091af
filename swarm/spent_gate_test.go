package swarm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
)

// SPEC S4, M5, M6: two runtimes hold a swarm run waiting at b's gate.
// The first's resume is taken, b passes the gate and its agent asks
// "which": the run is interrupted again, on the first runtime's answer.
// The second runtime's resume of the gate conflicts, and its retry of
// the same answer is refused (the gate is spent: b went past it) instead
// of claiming the run, so the first runtime's answer to "which" is not
// stale and finishes the run, each model turn and tool run once.
func TestSwarmSession_S4_ARetriedGateAnswerDoesNotClaimARunThatWentPastIt(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	mk := func() *swarm.Swarm {
		b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "dig"})).
			AddAgent(askingAgent(r, "b", handoff{}))
		return build(t, b, swarm.Config{Session: manager(t, st, "s"), System: actorstest.System(t),
			Hooks: []hook.Provider{gate(r, "b")}})
	}
	s1 := mk()
	res, err := s1.Invoke(ctx, agent.Text("find the answer"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	approval := interrupt.Respond(res.Interrupts[0].ID, "y")
	s2 := mk() // holds the run at the gate

	res, err = s1.Invoke(ctx, agent.Resume(approval))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "b's agent asks")
	require.Len(t, res.Interrupts, 1)
	which := interrupt.Respond(res.Interrupts[0].ID, "left")

	_, err = s2.Invoke(ctx, agent.Resume(approval))
	require.ErrorIs(t, err, persistence.ErrConflict, "the run s2 holds is stale")
	_, err = s2.Invoke(ctx, agent.Resume(approval))
	if assert.ErrorIs(t, err, interrupt.ErrNotInterrupted, "b went past the gate") {
		assert.NotErrorIs(t, err, persistence.ErrConflict)
		assert.Contains(t, err.Error(), approval.ID, "the refusal names the id")
	}

	res, err = s1.Invoke(ctx, agent.Resume(which))
	require.NoError(t, err, "s1's answer is not stale")
	assert.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, []string{"a", "b"}, res.ExecutionOrder)
	assert.Equal(t, 1, r.count("gate:b"), "the gate asked once")
	assert.Equal(t, 2, r.count("model:b"), "b's model: the question, then the answer")
}
