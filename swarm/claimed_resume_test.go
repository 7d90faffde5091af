package swarm_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
)

// SPEC S4, M5, I7: two runtimes (two processes) hold the same swarm run,
// which waits at b's gate after a's handoff, and both resume it. The
// first's resume is taken (its claim is saved) and b's agent runs; the
// second gets ErrConflict and takes the stored run, in which the gate is
// answered and the run goes on. Its retry of the same answer, while the
// first still runs b, is refused as waiting for no answer: it does not
// claim the run again, so b's model runs once and the first runtime's
// resume finishes the run.
func TestSwarmSession_S4_ARetriedResumeDoesNotTakeARunAnotherWriterResumed(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	started, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	var calls atomic.Int32
	slow := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.add("model:b")
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
		return model.TextTurn("b done"), nil
	})
	mk := func() *swarm.Swarm {
		b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "dig"})).
			AddAgent(agent.Config{ID: "b", Model: slow})
		return build(t, b, swarm.Config{Session: manager(t, st, "s"), System: actorstest.System(t),
			Hooks: []hook.Provider{gate(r, "b")}})
	}
	s1 := mk()
	res, err := s1.Invoke(ctx, agent.Text("find the answer"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	answer := interrupt.Respond(res.Interrupts[0].ID, "y")
	s2 := mk() // holds the interrupted run
	// Before the swarms close: a failed check does not leave b waiting.
	t.Cleanup(func() { released.Do(func() { close(release) }) })

	type outcome struct {
		res *multiagent.Result
		err error
	}
	first := make(chan outcome, 1)
	go func() {
		res, err := s1.Invoke(ctx, agent.Resume(answer))
		first <- outcome{res, err}
	}()
	<-started // s1's resume is taken and b's agent runs

	_, err = s2.Invoke(ctx, agent.Resume(answer))
	require.ErrorIs(t, err, persistence.ErrConflict, "the run s2 holds is stale")
	_, err = s2.Invoke(ctx, agent.Resume(answer))
	if assert.ErrorIs(t, err, interrupt.ErrNotInterrupted, "the answer was taken by s1's resume") {
		assert.NotErrorIs(t, err, persistence.ErrConflict)
		assert.Contains(t, err.Error(), answer.ID, "the refusal names the id")
	}

	released.Do(func() { close(release) })
	out := <-first
	if assert.NoError(t, out.err, "s1's resume, taken, is not cut off") {
		assert.Equal(t, multiagent.StatusCompleted, out.res.Status, out.res.Message)
		assert.Equal(t, []string{"a", "b"}, out.res.ExecutionOrder)
	}
	assert.Equal(t, 1, r.count("model:b"), "b's model ran once")
	assert.Equal(t, 1, r.count("gate:b"), "the gate asked once")
}
