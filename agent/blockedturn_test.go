package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// A turn the provider stopped with a guardrail or its content filter ends
// the invocation with that stop reason: the tools it asked for do not run
// (the provider blocked the turn), and the history asks for no tool
// result (SPEC A3), so the next prompt runs.
func TestInvoke_ABlockedTurnRunsNoToolAndEndsWithItsStopReason(t *testing.T) {
	for _, reason := range []model.StopReason{model.StopGuardrailIntervened, model.StopContentFiltered} {
		t.Run(string(reason), func(t *testing.T) {
			ctx := context.Background()
			ran := 0
			tl := tool.New("delete_files", "deletes files", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
				ran++
				return "deleted", nil
			})
			m := model.Scripted(
				model.Turn{Text: "Deleting.", Calls: []model.ToolCall{model.Call("t1", "delete_files", map[string]any{})}, StopReason: reason},
				model.TextTurn("hello again"),
			)
			a, err := agent.New(ctx, agent.Config{Model: m, Tools: []tool.Tool{tl}, System: actorstest.System(t)})
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Close(context.Background()) })

			res, err := a.Invoke(ctx, agent.Text("delete everything"))
			require.NoError(t, err)
			assert.Equal(t, agent.StopReason(reason), res.StopReason)
			assert.Zero(t, ran, "no tool of a blocked turn runs")
			assert.Empty(t, res.Message.ToolUses())

			res, err = a.Invoke(ctx, agent.Text("hi"))
			require.NoError(t, err, "the history asks for no tool result")
			assert.Equal(t, "hello again", res.Message.Text())
		})
	}
}
