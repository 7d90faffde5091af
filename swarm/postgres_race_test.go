package swarm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/swarm"
)

// SPEC S4, S3, M10: two runtimes (two Systems, each with a PostgreSQL
// store of its own, as two processes have) hold the same swarm run, in
// which b's agent waits for an answer, and resume it at once. Exactly one
// proceeds; the other gets ErrConflict and runs nothing, so the answered
// tool and the agent after the handoff run once; the loser, retrying,
// finds the run over.
func TestSwarmSession_S4_TwoRuntimesRacingAResumeOnPostgreSQLRunItOnce(t *testing.T) {
	ctx := context.Background()
	session := "race-" + uuid.NewString()
	r := newRecorder()
	mk := func() *swarm.Swarm {
		return build(t, researchSwarm(r), swarm.Config{Session: manager(t, postgresStore(t), session), System: actorstest.System(t)})
	}
	s1 := mk()
	res, err := s1.Invoke(ctx, agent.Text("find the answer"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	answer := interrupt.Respond(res.Interrupts[0].ID, "42")
	s2 := mk()

	type outcome struct {
		res *multiagent.Result
		err error
	}
	done := make(chan outcome, 2)
	for _, s := range []*swarm.Swarm{s1, s2} {
		go func() {
			res, err := s.Invoke(ctx, agent.Resume(answer))
			done <- outcome{res, err}
		}()
	}
	var won, lost int
	for range 2 {
		o := <-done
		switch {
		case o.err == nil:
			won++
			assert.Equal(t, multiagent.StatusCompleted, o.res.Status, o.res.Message)
		case errors.Is(o.err, persistence.ErrConflict):
			lost++
		default:
			t.Fatalf("resume: %v", o.err)
		}
	}
	require.Equal(t, 1, won, "exactly one resume proceeds")
	require.Equal(t, 1, lost)
	assert.Equal(t, 1, r.count("tool:b"), "the answered tool ran once")
	assert.Equal(t, 1, r.count("model:c"), "the node after the handoff ran once")

	for _, s := range []*swarm.Swarm{s1, s2} {
		_, err := s.Invoke(ctx, agent.Resume(answer))
		require.ErrorIs(t, err, interrupt.ErrNotInterrupted, "the run is over for both")
	}
	assert.Equal(t, 1, r.count("tool:b"))
}
