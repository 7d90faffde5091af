package swarm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
)

// researchSwarm is a → b → c: a shares {"k":"v"}; b's agent interrupts
// from a tool it runs beside its handoff to c, sharing {"found":1}.
func researchSwarm(r *recorder) *swarm.Builder {
	return swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "dig", context: map[string]any{"k": "v"}})).
		AddAgent(askingAgent(r, "b", handoff{to: "c", message: "write it up", context: map[string]any{"found": 1}})).
		AddAgent(teamAgent(r, "c", handoff{}))
}

// SPEC M10, M9: an interrupted swarm is resumed by a brand-new swarm (a
// fresh actor system, as a new process has) built the same way on the
// same session: nothing completed runs again, the interrupted agent
// resumes, and the swarm's own state (node history, shared context)
// survived, so the node after the handoff is told all of it.
func TestSwarmSession_FreshRuntimeResumesInterruptedRun(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	cfg := func() swarm.Config {
		return swarm.Config{Session: manager(t, st, "sess"), System: actorstest.System(t)}
	}
	s1 := build(t, researchSwarm(r), cfg())
	res, err := s1.Invoke(ctx, agent.Text("find the answer"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	require.NoError(t, s1.Close(ctx))

	s2 := build(t, researchSwarm(r), cfg())
	now, err := s2.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, now.Status)
	require.Len(t, now.Interrupts, 1)
	assert.Equal(t, id, now.Interrupts[0].ID)

	res, err = s2.Invoke(ctx, agent.Resume(interrupt.Respond(id, "42")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Len(t, r.prompts("a"), 1, "a completed before: not run again")
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, 1, r.count("model:c"))
	assert.Equal(t, "b done: Handing off to c: write it up; answer 42", res.Node("b").Text())
	require.Len(t, r.prompts("c"), 1)
	p := r.prompts("c")[0]
	assert.Contains(t, p, "Handoff message from b: write it up")
	assert.Contains(t, p, "User request: find the answer")
	assert.Contains(t, p, "in order: a → b")
	assert.Contains(t, p, `- a: {"k":"v"}`)
	assert.Contains(t, p, `- b: {"found":1}`)
}

// SPEC M10, M3: a gate on a handoff target, answered in a fresh runtime,
// runs the target with the handoff message it was handed before the
// restart.
func TestSwarmSession_GateAnsweredInFreshRuntimeRunsTargetWithHandoffMessage(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	b := func() *swarm.Builder {
		return swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "approve the refund"})).AddAgent(teamAgent(r, "b", handoff{}))
	}
	cfg := func() swarm.Config {
		return swarm.Config{ID: "desk", Session: manager(t, st, "sess"), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "b")}}
	}
	s1 := build(t, b(), cfg())
	res, err := s1.Invoke(ctx, agent.Text("refund order 7"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	require.NoError(t, s1.Close(ctx))

	s2 := build(t, b(), cfg())
	res, err = s2.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Len(t, r.prompts("a"), 1)
	require.Len(t, r.prompts("b"), 1)
	assert.Contains(t, r.prompts("b")[0], "Handoff message from a: approve the refund")
	assert.Contains(t, r.prompts("b")[0], "User request: refund order 7")
}

// SPEC M10: a swarm whose team changed between save and resume (agents
// removed or added, another entry point, another reset rule) is a clear
// error, not a silent restart.
func TestSwarmSession_ChangedTeamIsAnError(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	s1 := build(t, researchSwarm(r), swarm.Config{Session: manager(t, st, "sess")})
	_, err := s1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.NoError(t, s1.Close(ctx))

	other := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{})).AddAgent(teamAgent(r, "c", handoff{}))
	_, err = other.Build(ctx, swarm.Config{Session: manager(t, st, "sess"), System: actorstest.System(t)})
	require.Error(t, err)
	assert.ErrorIs(t, err, actors.ErrTopology)
	assert.Contains(t, err.Error(), `"b"`)

	// The same agents and one more, or another entry point: another team.
	for name, changed := range map[string]*swarm.Builder{
		"an agent added":       researchSwarm(r).AddAgent(teamAgent(r, "d", handoff{})),
		"another entry point":  researchSwarm(r).SetEntryPoint("b"),
		"agents reset revisit": researchSwarm(r).ResetOnRevisit(true),
	} {
		_, err = changed.Build(ctx, swarm.Config{Session: manager(t, st, "sess"), System: actorstest.System(t)})
		require.ErrorIs(t, err, actors.ErrTopology, name)
		assert.Contains(t, err.Error(), `nodes "a" "b" "c"; entry point "a"`, name)
	}
	s2 := build(t, researchSwarm(r), swarm.Config{Session: manager(t, st, "sess"), System: actorstest.System(t)})
	now, err := s2.Status(ctx)
	require.NoError(t, err, "the team that saved the run still opens it")
	assert.Equal(t, multiagent.StatusInterrupted, now.Status)
}

// SPEC M10, R4: with an idle timeout an interrupted swarm is passivated
// (its actor and its agents) and the resume re-activates it from the
// store; the handoff the resumed agent made is still followed.
func TestSwarmSession_PassivatedSwarmResumes(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(ctx) })
	s := build(t, researchSwarm(r), swarm.Config{Session: manager(t, st, "sess"), System: sys, IdleTimeout: 20 * time.Millisecond})
	res, err := s.Invoke(ctx, agent.Text("find it"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	lc.AwaitNoneLive(t) // nothing sends to the swarm until the resume
	kinds := lc.PassivatedKinds()
	var swarms int
	for k := range kinds {
		if strings.HasPrefix(k, swarm.Kind+":") {
			swarms++
		}
	}
	require.Equal(t, 1, swarms, "the swarm's actor passivated: %v", kinds)
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "7")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Len(t, r.prompts("a"), 1)
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, 1, r.count("model:c"))
	require.Len(t, r.prompts("c"), 1)
	assert.Contains(t, r.prompts("c")[0], `- a: {"k":"v"}`)
}

// SPEC S4, M10: two resumes of one interrupted swarm, from two runtimes
// (as two processes) that both loaded the run, race: one proceeds to the
// end, the other gets ErrConflict, and the interrupted agent's tool runs
// once.
func TestSwarmSession_RacingResumesOneProceedsOneConflicts(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	cfg := func() swarm.Config {
		return swarm.Config{Session: manager(t, st, "race"), System: actorstest.System(t)}
	}
	s1 := build(t, researchSwarm(r), cfg())
	res, err := s1.Invoke(ctx, agent.Text("find the answer"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	require.NoError(t, s1.Close(ctx))

	a, b := build(t, researchSwarm(r), cfg()), build(t, researchSwarm(r), cfg())
	type outcome struct {
		res *multiagent.Result
		err error
	}
	out := make(chan outcome, 2)
	for _, s := range []*swarm.Swarm{a, b} {
		go func() {
			tctx, cancel := context.WithTimeout(ctx, 20*time.Second) // bounds a hang only
			defer cancel()
			res, err := s.Invoke(tctx, agent.Resume(interrupt.Respond(id, "42")))
			out <- outcome{res, err}
		}()
	}
	var won, lost int
	for range 2 {
		o := <-out
		switch {
		case o.err == nil:
			won++
			assert.Equal(t, multiagent.StatusCompleted, o.res.Status, o.res.Message)
		default:
			lost++
			assert.ErrorIs(t, o.err, persistence.ErrConflict)
		}
	}
	assert.Equal(t, 1, won)
	assert.Equal(t, 1, lost)
	assert.Equal(t, 1, r.count("tool:b"), "the answered tool ran once")
	assert.Equal(t, 1, r.count("model:c"), "the node after the handoff ran once")
}
