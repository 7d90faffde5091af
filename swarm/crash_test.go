package swarm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
)

// copyingStore copies the session after every save: what a crash right
// after that save leaves (saves are atomic).
type copyingStore struct {
	persistence.Store
	mu     sync.Mutex
	copies []*export.Session
}

func (s *copyingStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.Store.Save(ctx, opts, changes...)
	if err == nil {
		exp, xerr := export.Read(ctx, s.Store, "crash")
		if xerr != nil {
			return v, xerr
		}
		s.copies = append(s.copies, exp)
	}
	return v, err
}

// finishSwarm drives a swarm to its end as an application does after a
// restart: carry a cut-off run on, answer interrupts, or start the task.
func finishSwarm(t *testing.T, s *swarm.Swarm) *multiagent.Result {
	t.Helper()
	ctx := context.Background()
	for range 6 {
		st, err := s.Status(ctx)
		require.NoError(t, err)
		var in agent.Input
		switch st.Status {
		case multiagent.StatusCompleted:
			return st
		case multiagent.StatusPending:
			in = agent.Text("find the answer")
		case multiagent.StatusInterrupted:
			var rs []interrupt.Response
			for _, i := range st.Interrupts {
				rs = append(rs, interrupt.Respond(i.ID, "42"))
			}
			in = agent.Resume(rs...)
		case multiagent.StatusExecuting:
			in = agent.Input{}
		default:
			t.Fatalf("run ended %s: %s", st.Status, st.Message)
		}
		_, err = s.Invoke(ctx, in)
		require.NoError(t, err)
	}
	t.Fatal("the swarm did not finish")
	return nil
}

// SPEC M10, M9, S6: a crash after any save of a swarm run resumes in a new
// runtime: the handoffs made before the crash are followed (the swarm
// does not end early), no node that had completed runs again, and every
// node ends COMPLETED.
func TestSwarmCrash_ResumeAfterEverySaveFollowsTheHandoffs(t *testing.T) {
	ctx := context.Background()
	cs := &copyingStore{Store: memory.New()}
	r := newRecorder()
	s := build(t, researchSwarm(r), swarm.Config{Session: manager(t, cs, "crash")})
	res := finishSwarm(t, s)
	require.Len(t, res.Results, 3)
	require.NoError(t, s.Close(ctx))
	cs.mu.Lock()
	copies := cs.copies
	cs.mu.Unlock()
	require.Greater(t, len(copies), 6)
	for i, exp := range copies {
		st := memory.New()
		require.NoError(t, export.Write(ctx, st, exp))
		r2 := newRecorder()
		s2 := build(t, researchSwarm(r2), swarm.Config{Session: manager(t, st, "crash"), System: actorstest.System(t)})
		before, err := s2.Status(ctx)
		require.NoError(t, err, "copy %d", i)
		done := map[string]bool{}
		for _, n := range before.Results {
			done[n.NodeID] = n.Status == multiagent.StatusCompleted
		}
		final := finishSwarm(t, s2)
		require.Len(t, final.Results, 3, "copy %d: every node ran (no handoff lost)", i)
		for _, n := range final.Results {
			assert.Equal(t, multiagent.StatusCompleted, n.Status, "copy %d node %s", i, n.NodeID)
			if done[n.NodeID] {
				assert.Zero(t, r2.count("model:"+n.NodeID), "copy %d: %s had completed", i, n.NodeID)
			}
		}
		require.NoError(t, s2.Close(ctx))
	}
}
