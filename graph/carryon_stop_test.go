package graph_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
)

// heldStore keeps the session as the first save that holds node "w" back
// left it, and closes held then; it closes xWaits once a save holds node
// x INTERRUPTED.
type heldStore struct {
	persistence.Store
	once   sync.Once
	held   chan struct{}
	copy   *export.Session
	xOnce  sync.Once
	xWaits chan struct{}
}

func (s *heldStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	v, err := s.Store.Save(ctx, opts, changes...)
	if err == nil && s.copy == nil {
		exp, xerr := export.Read(ctx, s.Store, "s")
		if xerr != nil {
			return v, xerr
		}
		for _, rec := range exp.Records {
			for _, m := range rec.Messages {
				if rec.ID == "g" && strings.Contains(string(m), `{"node":{"id":"x","status":"NODE_STATUS_INTERRUPTED"`) {
					s.xOnce.Do(func() { close(s.xWaits) })
				}
			}
			if rec.ID == "g" && strings.Contains(string(rec.Data), `"held":[{"node":"w"`) {
				s.copy = exp
				s.once.Do(func() { close(s.held) })
			}
		}
	}
	return v, err
}

// SPEC M4, M10: a run cut off while it scheduled nothing new (x waits at
// its gate) is carried on after the crash the same way: its cut-off node
// z finishes, and w, ready since y completed (held back), does not run
// until x is answered (before, the carry-on ran it, and the rest of the
// graph after it, while x still waited). The crash is the copy of the
// store as the save that held w back left it, with z running.
func TestGraphCrash_ACarriedOnRunSchedulesNothingNewWhileItWaits_M4(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	hs := &heldStore{Store: memory.New(), held: make(chan struct{}), xWaits: make(chan struct{})}
	nodes := func(r *recorder, block bool) *graph.Builder {
		z := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			if block {
				<-hs.held
			}
			r.add("fn:z")
			return []model.ContentBlock{model.Text("z out")}, nil
		})
		return graph.NewBuilder().AddNode("x", textAgent(r, "x")).AddNode("y", agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			if block {
				<-hs.xWaits
			}
			return []model.ContentBlock{model.Text("y out")}, nil
		})).AddNode("z", z).AddNode("w", fn(r, "w", nil)).
			AddEdge("y", "w")
	}
	g := build(t, nodes(r, true), graph.Config{ID: "g", Session: manager(t, hs, "s"), Hooks: []hook.Provider{gate(r, "x")}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))
	require.NotNil(t, hs.copy)

	st := memory.New()
	require.NoError(t, export.Write(ctx, st, hs.copy))
	r2 := newRecorder()
	g2 := build(t, nodes(r2, false), graph.Config{ID: "g", Session: manager(t, st, "s"), Hooks: []hook.Provider{gate(r2, "x")}})
	before, err := g2.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusExecuting, before.Status)
	res, err = g2.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status)
	assert.Equal(t, 1, r2.count("fn:z"), "the cut-off node finished")
	assert.Equal(t, 0, r2.count("fn:w"), "nothing new is scheduled while x waits")
	require.Len(t, res.Interrupts, 1)
	res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r2.count("fn:w"))
}
