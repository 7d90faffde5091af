package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/internal/twostores"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

// staleRig builds agents of one session ("shared") and id ("assistant"),
// each in a System of its own (a process of its own), whose model asks
// for delete_files calls one per turn (toolUseIDs, in order) and then
// answers text; every call asks for approval first.
type staleRig struct {
	runs  *counter
	calls []string
}

func (r *staleRig) build(t *testing.T, st persistence.Store) *agent.Agent {
	t.Helper()
	sm, err := persistence.NewSessionManager(st, "shared")
	require.NoError(t, err)
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.runs.inc(tc.ToolUse.ToolUseID)
		return "deleted", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		done := 0
		for _, msg := range req.Messages {
			done += len(msg.ToolResults())
		}
		if done < len(r.calls) {
			return model.ToolTurn(model.Call(r.calls[done], "delete_files", pathsIn{Paths: []string{r.calls[done]}})), nil
		}
		return model.TextTurn("done"), nil
	})
	return newAgent(t, agent.Config{ID: "assistant", Session: sm, System: actorstest.System(t), Tools: []tool.Tool{del},
		Model: m, Hooks: []hook.Provider{approveHook("delete_files", "approval")}})
}

// requireStaleConflict checks that err is the conflict of a writer of the
// agent's record based on version expected, while st holds another.
func requireStaleConflict(t *testing.T, st persistence.Store, err error, expected int64) {
	t.Helper()
	require.ErrorIs(t, err, persistence.ErrConflict)
	assert.NotErrorIs(t, err, interrupt.ErrNotInterrupted, "a conflict, not the stale state's refusal")
	assert.NotErrorIs(t, err, interrupt.ErrUnknownID, "a conflict, not the stale state's refusal")
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce)
	key := persistence.Key{SessionID: "shared", Kind: persistence.KindAgent, ID: "assistant"}
	rec, lerr := st.Load(context.Background(), key)
	require.NoError(t, lerr)
	assert.Equal(t, key, ce.Key)
	assert.Equal(t, expected, ce.Expected)
	assert.Equal(t, rec.Version, ce.Actual)
	assert.NotEqual(t, ce.Expected, ce.Actual)
}

// SPEC S4, R4: two runtimes (two processes) built the same agent of one
// session before anything ran. The first stops at an approval; the
// second, whose state is the empty one it loaded, is given the answer.
// It finds its state stale instead of refusing the resume as "not
// interrupted" for ever: the call fails with the *ConflictError a lost
// save gives (nothing runs), the agent takes the stored run, and the
// retried resume runs the approved tool. The tool runs exactly once
// overall, and a genuinely wrong resume of an agent whose state is the
// stored one is still refused as such.
func TestSession_S4_AStaleAgentRefusingAResumeTakesTheStoredRunSoTheRetryProceeds(t *testing.T) {
	for _, stores := range twostores.Pairs() {
		t.Run(stores.Name, func(t *testing.T) {
			ctx := context.Background()
			st1, st2 := stores.Open(t)
			rig := &staleRig{runs: &counter{}, calls: []string{"t1"}}
			a1, a2 := rig.build(t, st1), rig.build(t, st2)

			res, err := a1.Invoke(ctx, agent.Text("clean up"))
			require.NoError(t, err)
			require.Equal(t, agent.StopInterrupt, res.StopReason)
			in := res.Interrupts[0]

			_, err = a2.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
			requireStaleConflict(t, st2, err, 0)
			assert.Equal(t, 0, rig.runs.total(), "nothing runs on a stale state")

			res, err = a2.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
			require.NoError(t, err, "the retry resumes the stored run")
			assert.Equal(t, agent.StopEndTurn, res.StopReason)
			assert.Equal(t, 1, rig.runs.get("t1"))

			// Up to date, and waiting for nothing: a resume is wrong.
			_, err = a2.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
			require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
			assert.NotErrorIs(t, err, persistence.ErrConflict)

			// The first agent is the stale one now: its resume loses its
			// claim (ErrConflict), and then it is up to date.
			_, err = a1.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
			require.ErrorIs(t, err, persistence.ErrConflict)
			_, err = a1.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
			require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
			assert.NotErrorIs(t, err, persistence.ErrConflict)

			assert.Equal(t, 1, rig.runs.get("t1"), "the approved tool ran exactly once")
			assert.Equal(t, 1, rig.runs.total())
			requireValidHistory(t, agenttest.Messages(t, a2))
		})
	}
}

// SPEC S4, I7: an agent that loaded an interrupted run and did nothing
// with it while another runtime answered it and stopped at the next
// approval (new ids). Answering the new interrupt, it finds its state
// stale instead of refusing the id as unknown (ErrConflict, nothing
// runs), takes the stored run, and an id that is unknown in the stored
// run is then refused as such. Likewise the other runtime, holding an
// interrupted run that was finished since, gets ErrConflict for a prompt
// rather than "resume with interrupt responses", and takes the next one.
func TestSession_S4_AStaleAgentRefusingAnIDOrAPromptTakesTheStoredRun(t *testing.T) {
	for _, stores := range twostores.Pairs() {
		t.Run(stores.Name, func(t *testing.T) {
			ctx := context.Background()
			st1, st2 := stores.Open(t)
			rig := &staleRig{runs: &counter{}, calls: []string{"t1", "t2"}}
			a1 := rig.build(t, st1)
			res, err := a1.Invoke(ctx, agent.Text("clean up"))
			require.NoError(t, err)
			require.Equal(t, agent.StopInterrupt, res.StopReason)
			first := res.Interrupts[0]
			a2 := rig.build(t, st2) // loads the run waiting for first
			status, err := a2.Status(ctx)
			require.NoError(t, err)
			require.Equal(t, agent.ActivityInterrupted, status.State)
			stale := versionOf(t, st2)

			res, err = a1.Invoke(ctx, agent.Resume(respond(first, "y")))
			require.NoError(t, err)
			require.Equal(t, agent.StopInterrupt, res.StopReason)
			second := res.Interrupts[0]
			require.NotEqual(t, first.ID, second.ID)

			_, err = a2.Invoke(ctx, agent.Resume(respond(second, "y")))
			requireStaleConflict(t, st2, err, stale)
			assert.Equal(t, 0, rig.runs.get("t2"))

			// Up to date: an id the stored run does not have is wrong.
			_, err = a2.Invoke(ctx, agent.Resume(interrupt.Respond("no-such-id", "y")))
			require.ErrorIs(t, err, interrupt.ErrUnknownID)
			assert.NotErrorIs(t, err, persistence.ErrConflict)

			res, err = a2.Invoke(ctx, agent.Resume(respond(second, "y")))
			require.NoError(t, err)
			require.Equal(t, agent.StopEndTurn, res.StopReason)

			// a1 still waits for second, which a2 answered.
			_, err = a1.Invoke(ctx, agent.Text("and the rest"))
			require.ErrorIs(t, err, persistence.ErrConflict)
			assert.NotErrorIs(t, err, interrupt.ErrResumeRequired)
			res, err = a1.Invoke(ctx, agent.Text("and the rest"))
			require.NoError(t, err, "the stored run is finished: the prompt is taken")
			assert.Equal(t, agent.StopEndTurn, res.StopReason)

			assert.Equal(t, 1, rig.runs.get("t1"))
			assert.Equal(t, 1, rig.runs.get("t2"))
			requireValidHistory(t, agenttest.Messages(t, a1))
		})
	}
}

// versionOf is the stored version of the rig's agent record.
func versionOf(t *testing.T, st persistence.Store) int64 {
	t.Helper()
	rec, err := st.Load(context.Background(), persistence.Key{SessionID: "shared", Kind: persistence.KindAgent, ID: "assistant"})
	require.NoError(t, err)
	return rec.Version
}
