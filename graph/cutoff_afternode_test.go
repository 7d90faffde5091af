package graph_test

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
)

// cutOnceModel's first call reports its start on started and waits for
// its context to end (a Close cuts it off); later calls answer "done".
type cutOnceModel struct {
	once    sync.Once
	started chan struct{}
}

func (m *cutOnceModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	first := false
	m.once.Do(func() { first = true })
	if !first {
		return model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn("done"), nil }).Stream(ctx, req)
	}
	return func(yield func(model.StreamEvent, error) bool) {
		close(m.started)
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// SPEC M3, S6: a node run that a Close cuts off is carried on later, as
// after a crash: AfterNodeCall does not fire for the cut-off run (with a
// failure the run never had), only once for the run carried on to its end.
func TestGraph_AfterNodeCallFiresOnceForARunCarriedOnAfterAClose(t *testing.T) {
	for _, closeSystem := range []bool{false, true} {
		name := map[bool]string{false: "graph", true: "system"}[closeSystem]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := memory.New()
			m := &cutOnceModel{started: make(chan struct{})}
			var mu sync.Mutex
			var seen []multiagent.Status
			h := hook.Func(func(_ context.Context, ev *multiagent.AfterNodeCallEvent) error {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, ev.Result.Status)
				return nil
			})
			mk := func(sys *actors.System) *graph.Graph {
				return build(t, graph.NewBuilder().AddNode("a", agentnode.Agent(agent.Config{Model: m})),
					graph.Config{ID: "g", System: sys, Session: manager(t, store, "s"), Hooks: []hook.Provider{h}})
			}
			sys, err := actors.NewSystem(actors.DefaultConfig())
			require.NoError(t, err)
			defer sys.Close(ctx)
			g := mk(sys)
			invoked := make(chan error, 1)
			go func() { _, err := g.Invoke(ctx, agent.Text("go")); invoked <- err }()
			<-m.started
			if closeSystem {
				require.NoError(t, sys.Close(ctx))
			} else {
				require.NoError(t, g.Close(ctx))
			}
			require.Error(t, <-invoked, "the invocation was cut off")

			res := finish(t, mk(nil))
			assert.Equal(t, multiagent.StatusCompleted, res.Status)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []multiagent.Status{multiagent.StatusCompleted}, seen)
		})
	}
}
