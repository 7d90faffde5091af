package agent

import (
	"context"
	"encoding/json"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/tool"
)

// ToolInput is the input of an agent used as a tool: the prompt it is
// given.
type ToolInput struct {
	Prompt string `json:"prompt" jsonschema:"the request for the agent"`
}

// AsTool makes sub a tool of another agent (agent-as-tool, SPEC M11): the
// tool invokes sub with the prompt and returns the text of its answer.
// When sub stops for interrupts, the tool raises one interrupt per sub
// interrupt, named by the sub interrupt's id and with its reason, so the
// outer agent stops with them; their answers are routed back to sub,
// which resumes (it does not start again), then the tool returns sub's
// answer. With sessions on both agents this works across processes: sub
// keeps its interrupt state in its own record. Give sub an owner path or
// an id of its own so that its session record and ids do not clash with
// the outer agent's.
func AsTool(sub *Agent, name, description string, opts ...tool.Option) tool.Tool {
	return tool.New(name, description, func(ctx context.Context, tc *tool.Context, in ToolInput) (string, error) {
		st, err := sub.Status(ctx)
		if err != nil {
			return "", err
		}
		var input Input
		if st.Interrupted() {
			// Answers given to the outer interrupts go to sub, by id.
			var answers []interrupt.Response
			var raised error
			for _, si := range st.Interrupts {
				ans, err := tc.Interrupt(si.ID, reasonOf(si))
				if err != nil {
					if raised == nil {
						raised = err
					}
					continue
				}
				answers = append(answers, interrupt.Response{ID: si.ID, Value: ans})
			}
			if raised != nil {
				return "", raised
			}
			input = Resume(answers...)
		} else {
			input = Text(in.Prompt)
		}
		res, err := sub.Invoke(ctx, input)
		if err != nil {
			return "", err
		}
		if res.Interrupted() {
			var raised error
			for _, si := range res.Interrupts {
				if _, err := tc.Interrupt(si.ID, reasonOf(si)); err != nil && raised == nil {
					raised = err
				}
			}
			return "", raised
		}
		return res.Message.Text(), nil
	}, opts...)
}

func reasonOf(in interrupt.Interrupt) any {
	if !in.HasReason() {
		return nil
	}
	return json.RawMessage(in.Reason)
}
