package persistence_test

// A node's agent parks its durable saves for the orchestrator's commit
// (AgentSession.DeferDurable, SPEC M10). These tests pin that nothing
// parked is lost or overwritten, on every store: a later save of the
// agent carries the parked change (a take-back or a reset included), a
// failed save leaves it parked, and taking it ends the deferral.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
)

// eachStore runs fn once per store: memory, SQLite, and PostgreSQL when
// BRAID_TEST_POSTGRES_DSN names one (else that subtest skips).
func eachStore(t *testing.T, fn func(t *testing.T, st persistence.Store)) {
	open := map[string]func(t *testing.T) persistence.Store{
		"memory": func(*testing.T) persistence.Store { return memory.New() },
		"sqlite": func(t *testing.T) persistence.Store {
			st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
			require.NoError(t, err)
			return st
		},
		"postgres": func(t *testing.T) persistence.Store {
			st, err := postgres.New(context.Background(), postgres.Config{DSN: persistencetest.PostgresDSN(t)})
			require.NoError(t, err)
			return st
		},
	}
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			st := open[name](t)
			t.Cleanup(func() { _ = st.Close() })
			fn(t, st)
		})
	}
}

// parkedAgent opens a fresh session's agent "a" on st, its history hist
// stored, and defers its durable saves.
func parkedAgent(t *testing.T, st persistence.Store, hist ...string) (*persistence.SessionManager, *persistence.AgentSession) {
	return parkedAgentWith(t, st, nil, hist...)
}

// parkedAgentWith is parkedAgent with manager options.
func parkedAgentWith(t *testing.T, st persistence.Store, opts []persistence.ManagerOption, hist ...string) (*persistence.SessionManager, *persistence.AgentSession) {
	t.Helper()
	ctx := context.Background()
	m, err := persistence.NewSessionManager(st, "parked-"+uuid.NewString(), opts...)
	require.NoError(t, err)
	as, _, err := m.OpenAgent(ctx, "a")
	require.NoError(t, err)
	if len(hist) > 0 {
		require.NoError(t, as.Save(ctx, agentRec(0, userMsgs(hist...)...), persistence.SaveInvocation))
	}
	as.DeferDurable()
	return m, as
}

// storedTexts reads agent "a" back from the store through a new writer.
func storedTexts(t *testing.T, m *persistence.SessionManager) []string {
	t.Helper()
	_, rec, err := m.OpenAgent(context.Background(), "a")
	require.NoError(t, err)
	require.NotNil(t, rec)
	return msgTexts(rec.Messages)
}

// An agent cut off by a node timeout takes its prompt back (a rewrite,
// parked) after its node handed over its save; the next run's first save
// is not durable and commits at once: it carries the take-back, so the
// store holds the history the agent answered, not the cut-off prompt.
func TestAgentSession_LaterSaveCarriesAParkedTakeBack(t *testing.T) {
	eachStore(t, func(t *testing.T, st persistence.Store) {
		ctx := context.Background()
		m, as := parkedAgent(t, st, "q0", "a0")
		require.NoError(t, as.Save(ctx, agentRec(1, userMsgs("q0", "a0", "first")...), persistence.SaveMessage))
		require.NoError(t, as.Rewrite(ctx, agentRec(2, userMsgs("q0", "a0")...), 2, persistence.SaveInvocation), "the take-back")
		require.True(t, as.Parked())
		assert.Equal(t, []string{"q0", "a0", "first"}, storedTexts(t, m), "parked: not in the store yet")

		require.NoError(t, as.Save(ctx, agentRec(3, userMsgs("q0", "a0", "second")...), persistence.SaveMessage))
		assert.False(t, as.Parked(), "the save carried the parked change")
		assert.Equal(t, []string{"q0", "a0", "second"}, storedTexts(t, m))
		require.NoError(t, as.Save(ctx, agentRec(4, userMsgs("q0", "a0", "second", "answer")...), persistence.SaveMessage))
		assert.Equal(t, []string{"q0", "a0", "second", "answer"}, storedTexts(t, m))
	})
}

// ResetOnRevisit: a node's agent gets its initial (shorter) history back
// with a parked rewrite, then its revisit saves the new prompt at once:
// that save is based on the parked history, not on the longer stored one,
// and carries the reset.
func TestAgentSession_SaveAfterAParkedResetCarriesIt(t *testing.T) {
	eachStore(t, func(t *testing.T, st persistence.Store) {
		ctx := context.Background()
		m, as := parkedAgent(t, st, "q0", "a0", "q1", "a1")
		require.NoError(t, as.Rewrite(ctx, agentRec(0), 0, persistence.SaveInvocation), "the reset")
		require.NoError(t, as.Save(ctx, agentRec(0, userMsgs("revisit")...), persistence.SaveMessage),
			"one message after a reset to none is an append, not a shorter history")
		assert.Equal(t, []string{"revisit"}, storedTexts(t, m))
		assert.False(t, as.Parked())
	})
}

// Two durable saves of one run are parked as one change (the later
// carries the earlier's rewrite), which the orchestrator commits with its
// own record in one transaction.
func TestAgentSession_ParkedSavesMergeIntoOneChange(t *testing.T) {
	eachStore(t, func(t *testing.T, st persistence.Store) {
		ctx := context.Background()
		m, as := parkedAgent(t, st, "q0", "a0", "q1")
		require.NoError(t, as.Rewrite(ctx, agentRec(1, userMsgs("q0", "x")...), 1, persistence.SaveInterrupt))
		require.NoError(t, as.Save(ctx, agentRec(2, userMsgs("q0", "x", "y")...), persistence.SaveInvocation))
		assert.Equal(t, []string{"q0", "a0", "q1"}, storedTexts(t, m))
		staged := as.TakeDeferred()
		require.NotNil(t, staged)
		orch, _, err := m.Open(ctx, persistence.KindMultiAgent, "g")
		require.NoError(t, err)
		os, err := orch.Stage(json.RawMessage(`{"n":1}`), 0, nil)
		require.NoError(t, err)
		require.NoError(t, m.Commit(ctx, persistence.SaveInvocation, staged, os))
		assert.Equal(t, []string{"q0", "x", "y"}, storedTexts(t, m))

		require.NoError(t, as.Save(ctx, agentRec(3, userMsgs("q0", "x", "y", "z")...), persistence.SaveMessage))
		assert.Equal(t, []string{"q0", "x", "y", "z"}, storedTexts(t, m), "the writer follows the orchestrator's commit")
	})
}

// Taking the parked change ends the deferral: a durable save after it
// (the late take-back of an agent whose node timed out) commits at once,
// for no one would take it; DeferDurable parks again.
func TestAgentSession_TakeDeferredEndsTheDeferral(t *testing.T) {
	eachStore(t, func(t *testing.T, st persistence.Store) {
		ctx := context.Background()
		m, as := parkedAgent(t, st, "q0")
		assert.Nil(t, as.TakeDeferred())
		require.NoError(t, as.Save(ctx, agentRec(1, userMsgs("q0", "a0")...), persistence.SaveInvocation))
		assert.False(t, as.Parked())
		assert.Equal(t, []string{"q0", "a0"}, storedTexts(t, m))

		as.DeferDurable()
		require.NoError(t, as.Save(ctx, agentRec(2, userMsgs("q0", "a0", "q1")...), persistence.SaveInvocation))
		assert.True(t, as.Parked())
		assert.Equal(t, []string{"q0", "a0"}, storedTexts(t, m))
	})
}

// failOnce fails the next Save once armed, changing nothing.
type failOnce struct {
	persistence.Store
	armed atomic.Bool
}

var errInjected = errors.New("injected save failure")

func (s *failOnce) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if s.armed.CompareAndSwap(true, false) {
		return nil, errInjected
	}
	return s.Store.Save(ctx, opts, changes...)
}

// A save that carries a parked change and fails changes nothing: the
// change stays parked, and the next save carries it.
func TestAgentSession_FailedSaveKeepsTheParkedChange(t *testing.T) {
	eachStore(t, func(t *testing.T, inner persistence.Store) {
		ctx := context.Background()
		st := &failOnce{Store: inner}
		m, as := parkedAgent(t, st, "q0", "a0", "first")
		require.NoError(t, as.Rewrite(ctx, agentRec(1, userMsgs("q0", "a0")...), 2, persistence.SaveInvocation))
		st.armed.Store(true)
		err := as.Save(ctx, agentRec(2, userMsgs("q0", "a0", "second")...), persistence.SaveMessage)
		require.ErrorIs(t, err, errInjected)
		assert.True(t, as.Parked(), "still parked after the failed save")
		assert.Equal(t, []string{"q0", "a0", "first"}, storedTexts(t, m))

		require.NoError(t, as.Save(ctx, agentRec(2, userMsgs("q0", "a0", "second")...), persistence.SaveMessage))
		assert.Equal(t, []string{"q0", "a0", "second"}, storedTexts(t, m))
		assert.False(t, as.Parked())
	})
}

// A rewrite may keep at most the saved messages (parked ones included).
func TestAgentSession_RewriteKeepsAtMostTheSavedMessages(t *testing.T) {
	eachStore(t, func(t *testing.T, st persistence.Store) {
		ctx := context.Background()
		_, as := parkedAgent(t, st, "q0")
		require.NoError(t, as.Save(ctx, agentRec(1, userMsgs("q0", "a0", "q1")...), persistence.SaveInvocation))
		require.True(t, as.Parked())
		require.NoError(t, as.Rewrite(ctx, agentRec(2, userMsgs("q0", "a0", "q1", "a1")...), 3, persistence.SaveInvocation),
			"three are saved (one stored, two parked)")
		err := as.Rewrite(ctx, agentRec(3, userMsgs("q0", "a0", "q1", "a1", "q2")...), 5, persistence.SaveInvocation)
		require.ErrorIs(t, err, persistence.ErrBadSave)
	})
}

// The orchestrator's Commit of a taken change that fails changes nothing:
// the change is parked again (the agent stays ahead of the store only in
// memory), and the agent's next save carries it.
func TestAgentSession_FailedCommitParksTheTakenChangeAgain(t *testing.T) {
	eachStore(t, func(t *testing.T, inner persistence.Store) {
		ctx := context.Background()
		st := &failOnce{Store: inner}
		m, as := parkedAgent(t, st, "q0", "a0", "q1", "a1")
		require.NoError(t, as.Rewrite(ctx, agentRec(1, userMsgs("reset")...), 0, persistence.SaveInvocation))
		staged := as.TakeDeferred()
		require.NotNil(t, staged)
		assert.True(t, as.Parked(), "taken, and in no store until its commit")
		st.armed.Store(true)
		require.ErrorIs(t, m.Commit(ctx, persistence.SaveInvocation, staged), errInjected)
		assert.True(t, as.Parked(), "parked again")
		assert.Equal(t, []string{"q0", "a0", "q1", "a1"}, storedTexts(t, m))

		require.NoError(t, as.Save(ctx, agentRec(2, userMsgs("reset", "answer")...), persistence.SaveMessage))
		assert.Equal(t, []string{"reset", "answer"}, storedTexts(t, m))
		assert.False(t, as.Parked())
	})
}

// orchestratorChange stages a change of orchestrator "g" for a Commit
// with its node's agent's taken change.
func orchestratorChange(t *testing.T, m *persistence.SessionManager, n int) *persistence.Staged {
	t.Helper()
	orch, _, err := m.Open(context.Background(), persistence.KindMultiAgent, "g")
	require.NoError(t, err)
	os, err := orch.Stage(json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), 0, nil)
	require.NoError(t, err)
	return os
}

// SPEC S4, M10: an agent cut off by a Cancel or a timeout goes on after
// its node's run has returned. Its save after the orchestrator took its
// parked change waits for the orchestrator's commit of it, and is based on
// what that commit leaves: neither save conflicts, and the store holds
// both.
func TestAgentSession_ASaveAfterTheTakeWaitsForTheTakenChangesCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, st persistence.Store) {
		ctx := context.Background()
		waiting := make(chan struct{}, 1)
		m, as := parkedAgentWith(t, st, []persistence.ManagerOption{persistence.TakenWaitForTest(func(persistence.Key) {
			waiting <- struct{}{}
		})}, "q0")
		require.NoError(t, as.Save(ctx, agentRec(1, userMsgs("q0", "a0")...), persistence.SaveInvocation))
		taken := as.TakeDeferred()
		require.NotNil(t, taken)

		saved := make(chan error, 1)
		go func() {
			saved <- as.Save(ctx, agentRec(2, userMsgs("q0", "a0", "late")...), persistence.SaveMessage)
		}()
		select {
		case <-waiting:
		case err := <-saved:
			saved <- err // saved before the take's commit: its base is the version the take's commit needs
		}
		require.NoError(t, m.Commit(ctx, persistence.SaveInvocation, taken, orchestratorChange(t, m, 1)),
			"the orchestrator's commit of the taken change")
		require.NoError(t, <-saved, "the agent's save after it")
		assert.Equal(t, []string{"q0", "a0", "late"}, storedTexts(t, m))
		assert.False(t, as.Parked())
	})
}

// A taken change whose commit fails is parked again, and the agent's save
// that waited for that commit carries it.
func TestAgentSession_ASaveWaitingForAFailedCommitCarriesTheTakenChange(t *testing.T) {
	eachStore(t, func(t *testing.T, inner persistence.Store) {
		ctx := context.Background()
		st := &failOnce{Store: inner}
		waiting := make(chan struct{}, 1)
		m, as := parkedAgentWith(t, st, []persistence.ManagerOption{persistence.TakenWaitForTest(func(persistence.Key) {
			waiting <- struct{}{}
		})}, "q0", "a0", "q1")
		require.NoError(t, as.Rewrite(ctx, agentRec(1, userMsgs("q0", "a0", "q1", "cancelled")...), 3, persistence.SaveInvocation))
		taken := as.TakeDeferred()
		require.NotNil(t, taken)

		saved := make(chan error, 1)
		go func() {
			saved <- as.Save(ctx, agentRec(2, userMsgs("q0", "a0", "q1", "cancelled", "late")...), persistence.SaveMessage)
		}()
		select {
		case <-waiting:
		case err := <-saved:
			saved <- err // saved before the take's commit: its base is the version the take's commit needs
		}
		st.armed.Store(true)
		require.ErrorIs(t, m.Commit(ctx, persistence.SaveInvocation, taken, orchestratorChange(t, m, 1)), errInjected)
		require.NoError(t, <-saved)
		assert.Equal(t, []string{"q0", "a0", "q1", "cancelled", "late"}, storedTexts(t, m))
		assert.False(t, as.Parked())
	})
}

// heldAgentSave holds the first Save of an agent's record once armed,
// after signalling entered, until release is closed.
type heldAgentSave struct {
	persistence.Store
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *heldAgentSave) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if changes[0].Key.Kind == persistence.KindAgent && s.armed.CompareAndSwap(true, false) {
		close(s.entered)
		<-s.release
	}
	return s.Store.Save(ctx, opts, changes...)
}

// An agent's save that carries its parked change (the deferral ended: its
// node's run returned) takes it out first: the orchestrator, saving
// meanwhile, finds nothing to take and commits its own record alone,
// instead of committing the change a second time on the version before
// (one of the two saves would conflict, SPEC S4).
func TestAgentSession_ASaveCarryingTheParkedChangeLeavesNothingToTake(t *testing.T) {
	eachStore(t, func(t *testing.T, inner persistence.Store) {
		ctx := context.Background()
		st := &heldAgentSave{Store: inner, entered: make(chan struct{}), release: make(chan struct{})}
		m, as := parkedAgent(t, st, "q0")
		require.NoError(t, as.Save(ctx, agentRec(1, userMsgs("q0", "a0")...), persistence.SaveInvocation))
		as.EndDeferral()
		require.True(t, as.Parked(), "EndDeferral leaves the change parked")

		st.armed.Store(true)
		saved := make(chan error, 1)
		go func() {
			saved <- as.Save(ctx, agentRec(2, userMsgs("q0", "a0", "late")...), persistence.SaveMessage)
		}()
		<-st.entered
		assert.Nil(t, as.TakeDeferred(), "the agent's save in flight carries it")
		close(st.release)
		require.NoError(t, <-saved)
		require.NoError(t, m.Commit(ctx, persistence.SaveInvocation, orchestratorChange(t, m, 1)))
		assert.Equal(t, []string{"q0", "a0", "late"}, storedTexts(t, m))
		assert.False(t, as.Parked())
	})
}

// A durable save after EndDeferral commits at once, carrying the parked
// change: nothing is left for the orchestrator to take.
func TestAgentSession_EndDeferralMakesTheNextDurableSaveCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, st persistence.Store) {
		ctx := context.Background()
		m, as := parkedAgent(t, st, "q0")
		require.NoError(t, as.Save(ctx, agentRec(1, userMsgs("q0", "a0")...), persistence.SaveInvocation))
		as.EndDeferral()
		require.NoError(t, as.Rewrite(ctx, agentRec(2, userMsgs("q0", "a0", "cancelled")...), 2, persistence.SaveInvocation))
		assert.False(t, as.Parked())
		assert.Nil(t, as.TakeDeferred())
		assert.Equal(t, []string{"q0", "a0", "cancelled"}, storedTexts(t, m))
	})
}

// SPEC S4: a parked change whose record another writer has saved over
// since can never commit. Its orchestrator's commit of it fails with a
// *ConflictError, and so does the agent's next save; after that nothing is
// parked (the agent may open its record again and go on from the store),
// and the orchestrator's next commit, with nothing of the agent to take,
// succeeds instead of failing on the stale change again.
func TestAgentSession_AStaleParkedChangeIsDroppedByItsConflict(t *testing.T) {
	eachStore(t, func(t *testing.T, st persistence.Store) {
		ctx := context.Background()
		m, as := parkedAgent(t, st, "q0")
		require.NoError(t, as.Save(ctx, agentRec(1, userMsgs("q0", "a0")...), persistence.SaveInvocation))
		require.True(t, as.Parked())

		other, err := persistence.NewSessionManager(st, m.SessionID())
		require.NoError(t, err)
		w2, _, err := other.OpenAgent(ctx, "a")
		require.NoError(t, err)
		require.NoError(t, w2.Save(ctx, agentRec(2, userMsgs("q0", "elsewhere")...), persistence.SaveInvocation))

		taken := as.TakeDeferred()
		require.NotNil(t, taken)
		err = m.Commit(ctx, persistence.SaveInvocation, orchestratorChange(t, m, 1), taken)
		require.ErrorIs(t, err, persistence.ErrConflict)

		err = as.Save(ctx, agentRec(3, userMsgs("q0", "a0", "q1")...), persistence.SaveMessage)
		require.ErrorIs(t, err, persistence.ErrConflict)
		assert.False(t, as.Parked(), "a change that can never commit is not kept parked")
		assert.Nil(t, as.TakeDeferred())
		require.NoError(t, m.Commit(ctx, persistence.SaveInvocation, orchestratorChange(t, m, 1)))
		assert.Equal(t, []string{"q0", "elsewhere"}, storedTexts(t, m))
	})
}
