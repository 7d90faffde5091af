package swarm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// SPEC R7: a tool of a swarm's agent that invokes the swarm running it
// gets ErrReentrant at once (the run waits for the agent, which waits for
// its tool), and Status, a read, is answered; the run goes on.
func TestSwarm_AToolThatInvokesItsOwnSwarmGetsErrReentrant(t *testing.T) {
	var s *swarm.Swarm
	var invokeErr, statusErr error
	var during multiagent.Status
	again := tool.New("again", "calls the swarm back", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // bounds a failure only
		defer cancel()
		_, invokeErr = s.Invoke(ctx, agent.Text("again"))
		var st *multiagent.Result
		if st, statusErr = s.Status(ctx); statusErr == nil {
			during = st.Status
		}
		return "called", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		return model.ToolTurn(model.Call("c1", "again", map[string]any{})), nil
	})
	s = build(t, swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m, Tools: []tool.Tool{again}}), swarm.Config{})
	res, err := s.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.ErrorIs(t, invokeErr, actors.ErrReentrant)
	assert.NoError(t, statusErr)
	assert.Equal(t, multiagent.StatusExecuting, during)
}
