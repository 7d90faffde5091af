package agent_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// panicStore panics on the first save of a finished tool's result.
type panicStore struct {
	*memory.Store
	armed atomic.Bool
}

func (s *panicStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	for _, c := range changes {
		if s.armed.Load() && bytes.Contains(c.Data, []byte(`"completedToolResults":[{`)) {
			s.armed.Store(false)
			panic("store bug")
		}
	}
	return s.Store.Save(ctx, opts, changes...)
}

// SPEC R6: a store that panics while a tool's result is saved, on a
// goroutine of the concurrent executor, fails the invocation with a
// *agent.PanicError; the agent stays usable (nothing is left locked): the
// next invocation runs to its end.
func TestStorePanic_R6_APanicSavingAToolResultFailsTheInvocationAndLeavesTheAgentUsable(t *testing.T) {
	ctx := context.Background()
	st := &panicStore{Store: memory.New()}
	ok := tool.New("ok", "ok", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) { return "ok", nil })
	m, err := persistence.NewSessionManager(st, "p")
	require.NoError(t, err)
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "ok", pathsIn{}), model.Call("t2", "ok", pathsIn{})),
		Tools: []tool.Tool{ok}, Session: m, System: actorstest.System(t), Executor: tool.Concurrent{}})
	st.armed.Store(true)
	_, err = a.Invoke(ctx, agent.Text("go"))
	var pe *agent.PanicError
	require.ErrorAs(t, err, &pe)
	res, err := a.Invoke(ctx, agent.Text("go again"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
}
