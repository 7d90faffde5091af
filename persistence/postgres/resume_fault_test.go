package postgres_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/tool"
)

// approvalAgent builds an agent of session whose model asks for the tool
// "act" once, gated by an approval interrupt; runs counts the tool's runs.
func approvalAgent(t *testing.T, st persistence.Store, session string, runs *atomic.Int32) *agent.Agent {
	t.Helper()
	act := tool.New("act", "acts", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		runs.Add(1)
		return "acted", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		return model.ToolTurn(model.Call("t1", "act", struct{}{})), nil
	})
	approve := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		_, err := ev.Interrupt("approval", nil)
		return err
	})
	a, err := agent.New(bg, agent.Config{ID: "a", Session: mustManager(t, st, session), System: actorstest.System(t),
		Model: m, Tools: []tool.Tool{act}, Hooks: []hook.Provider{approve}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(bg) })
	return a
}

// SPEC S4, S6, I7: an agent resumed with an approval while the server
// misbehaves runs the approved tool exactly once. The resume's claim
// (the save of the accepted answer) has its backend terminated while it
// waits for the session's lock: it runs again, and the resume goes on.
// Or the claim's reply is lost: the resume fails with
// persistence.ErrOutcomeUnknown before the tool runs; the same resume
// sent again is refused once the agent has loaded the stored claim
// (after, at most, a conflict), as any claim it did not see stored is
// another writer's to it (SPEC S4), and the empty input carries the
// claimed run on and runs the tool once. Either way the history holds one
// tool result.
func TestAgent_ApprovedToolRunsOnceWhenTheResumesClaimIsCutOff(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	admin, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(bg) })

	finish := func(t *testing.T, a *agent.Agent, res *agent.Result, runs *atomic.Int32) {
		t.Helper()
		assert.Equal(t, int32(1), runs.Load(), "the approved tool ran once")
		assert.Equal(t, "done", res.Message.Text())
		results := 0
		for _, m := range agenttest.Messages(t, a) {
			results += len(m.ToolResults())
		}
		assert.Equal(t, 1, results, "one tool result in the history")
	}

	t.Run("backend terminated", func(t *testing.T) {
		app := "braid-resume-" + uuid.NewString()[:8]
		s := storeNamed(t, app)
		session := "resume-" + uuid.NewString()
		var runs atomic.Int32
		a := approvalAgent(t, s, session, &runs)
		res, err := a.Invoke(bg, agent.Text("go"))
		require.NoError(t, err)
		require.Len(t, res.Interrupts, 1)
		in := agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y"))

		holder := holdSessionLock(t, session)
		type outcome struct {
			res *agent.Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := a.Invoke(bg, in)
			done <- outcome{res, err}
		}()
		first := waitingBackend(t, admin, app, 0)
		var ended bool
		require.NoError(t, admin.QueryRow(bg, `SELECT pg_terminate_backend($1, 10000)`, first).Scan(&ended))
		require.True(t, ended)
		waitingBackend(t, admin, app, first)
		assert.Zero(t, runs.Load(), "the tool waits for the claim")
		require.NoError(t, holder.Commit(bg))
		o := <-done
		require.NoError(t, o.err)
		finish(t, a, o.res, &runs)
	})

	t.Run("reply lost", func(t *testing.T) {
		s, proxy := proxiedStore(t)
		session := "resume-" + uuid.NewString()
		var runs atomic.Int32
		a := approvalAgent(t, s, session, &runs)
		res, err := a.Invoke(bg, agent.Text("go"))
		require.NoError(t, err)
		require.Len(t, res.Interrupts, 1)
		in := agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y"))

		cut := proxy.arm(0, appendReply)
		_, err = a.Invoke(bg, in)
		requireClosed(t, cut, "the proxy lost the claim's reply")
		require.ErrorIs(t, err, persistence.ErrOutcomeUnknown)
		assert.Zero(t, runs.Load(), "the tool does not run on a claim whose outcome is unknown")
		// The claim was stored: the resume sent again conflicts (the
		// agent kept its version) and loads it, and is then refused,
		// since nothing tells the agent's own claim from another
		// writer's; the run the claim began is carried on with the
		// empty input.
		for range 3 {
			if _, err = a.Invoke(bg, in); !errors.Is(err, persistence.ErrConflict) {
				break
			}
		}
		require.ErrorIs(t, err, interrupt.ErrNotInterrupted, "the resume, once the agent loaded the stored claim")
		assert.Zero(t, runs.Load(), "refused, nothing ran")
		res, err = a.Invoke(bg, agent.Input{})
		require.NoError(t, err, "the stored claim's run, carried on")
		finish(t, a, res, &runs)
	})
}
