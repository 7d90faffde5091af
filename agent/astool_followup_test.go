package agent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// followUpRig builds, on a fresh runtime and the session "f" of st, a sub
// agent that deletes the file its prompt names (once approved, unless
// ungated), and whose
// AfterInvocation callback, once it has answered "a", goes on at once
// with the follow-up prompt "check"; and an outer agent whose model asks
// for one call of it for "a". When cut is set, the delete of "check"
// calls it first.
type followUpRig struct {
	runs    *counter
	ungated bool
	cut     func(ctx context.Context)
}

func (r *followUpRig) build(t *testing.T, st persistence.Store) (sub, outer *agent.Agent) {
	t.Helper()
	sys := actorstest.System(t)
	sm, err := persistence.NewSessionManager(st, "f")
	require.NoError(t, err)
	_, subModel := fileDeleter(nil)
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		if r.cut != nil && in.Paths[0] == "check" {
			r.cut(ctx)
		}
		r.runs.inc(in.Paths[0])
		return "deleted " + in.Paths[0], nil
	})
	followUp := hook.Func(func(_ context.Context, ev *agent.AfterInvocationEvent) error {
		if ev.Result != nil && ev.Result.StopReason == agent.StopEndTurn && ev.Result.Message.Text() == "sub: deleted a" {
			ev.Resume(agent.Text("check"))
		}
		return nil
	})
	hooks := []hook.Provider{followUp}
	if !r.ungated {
		hooks = append(hooks, approveHook("delete_files", "approval"))
	}
	sub = newAgent(t, agent.Config{ID: "sub", OwnerPath: "outer/helper", System: sys, Session: sm, Model: subModel,
		Tools: []tool.Tool{del}, Hooks: hooks})
	outer = newAgent(t, agent.Config{ID: "outer", System: sys, Session: sm,
		Model: toolThenText("outer done", model.Call("o1", "helper", agent.ToolInput{Prompt: "a"})),
		Tools: []tool.Tool{agent.AsTool(sub, "helper", "a helper agent")}})
	return sub, outer
}

// requireFollowedUp checks the end of a call of a followUpRig's sub
// agent: the call got the answer to the follow-up, and the sub agent's
// history holds the call's prompt and the follow-up, once each.
func requireFollowedUp(t *testing.T, sub, outer *agent.Agent) {
	t.Helper()
	ctx := context.Background()
	snap, err := outer.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, snap.Messages)
	results := snap.Messages[2].ToolResults()
	require.Len(t, results, 1)
	assert.Equal(t, model.ToolSuccess, results[0].Status, results[0].Text())
	assert.Equal(t, "sub: deleted check", results[0].Text())
	subSnap, err := sub.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, subSnap.Messages)
	assert.Equal(t, 2, countUser(subSnap.Messages), "the call's prompt and the follow-up, once each")
}

// SPEC M11, A9: a sub agent used as a tool goes on, in the same call,
// with a follow-up prompt its AfterInvocation callback gives (Resume),
// and asks for approval in each of its two runs. Each question surfaces
// at the outer agent and each answer resumes the sub agent where it
// waits: no run starts over, each file is deleted once, and the call
// gets the sub agent's last answer. Before, the answer to the follow-up's
// question took the sub agent back to the follow-up prompt and ran the
// call's prompt again, which ended the call with an error result ("was
// answered and is asked again"); the follow-up's file was never deleted.
func TestAgentAsTool_M11_ASubAgentThatFollowsUpResumesWhereItWaits(t *testing.T) {
	ctx := context.Background()
	r := &followUpRig{runs: &counter{}}
	sub, outer := r.build(t, memory.New())
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	stops := answerAll(t, outer, res)
	assert.Len(t, stops, 2, "one question per run of the sub agent")
	assert.Equal(t, 1, r.runs.get("a"))
	assert.Equal(t, 1, r.runs.get("check"))
	requireFollowedUp(t, sub, outer)
}

// SPEC M11, S6, A9: the process dies while the follow-up run of a sub
// agent used as a tool deletes its file. Carried on in a fresh process,
// the outer call carries the sub agent's run on: the cut-off delete runs
// again (at least once), nothing else runs again and nothing is asked
// again. Before, the call took the sub agent back to the follow-up prompt
// and ran the call's prompt again: its file was deleted a second time.
func TestAgentAsTool_S6_ASubAgentCutOffInItsFollowUpIsCarriedOn(t *testing.T) {
	for _, gated := range []bool{false, true} {
		t.Run(map[bool]string{false: "ungated", true: "gated"}[gated], func(t *testing.T) {
			followUpCutOff(t, !gated)
		})
	}
}

func followUpCutOff(t *testing.T, ungated bool) {
	ctx := context.Background()
	st := openSQLite(t)
	var mu sync.Mutex
	var crash *export.Session
	r := &followUpRig{runs: &counter{}, ungated: ungated, cut: func(ctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		if crash == nil {
			exp, err := export.Read(ctx, st, "f") // what a crash leaves now
			require.NoError(t, err)
			crash = exp
		}
	}}
	_, outer := r.build(t, st)
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	answerAll(t, outer, res)
	require.NotNil(t, crash)
	require.NoError(t, outer.Close(ctx))

	st2 := openSQLite(t)
	require.NoError(t, export.Write(ctx, st2, crash))
	r2 := &followUpRig{runs: &counter{}, ungated: ungated}
	sub2, outer2 := r2.build(t, st2)
	s, err := outer2.Status(ctx)
	require.NoError(t, err)
	require.True(t, s.Incomplete(), "the crash cut the outer run off: %+v", s)
	res, err = outer2.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason, "nothing is asked again: %v", res.Interrupts)
	assert.Zero(t, r2.runs.get("a"))
	assert.Equal(t, 1, r2.runs.get("check"))
	requireFollowedUp(t, sub2, outer2)
}
