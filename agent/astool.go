package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
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
// answer. When sub, answered, stops again in the same call with an id it
// asked before (a BeforeTools gate on its next cycle: a fresh interrupt,
// SPEC A7), the outer interrupt is named "<id>@<n>", n the messages sub
// has added since the call's prompt, so that each stop is asked, and
// answered, once. With sessions on both agents this works across processes: sub
// keeps its interrupt state in its own record. A run of sub left
// unfinished (a crash or a Close cut it off) or waiting for answers is
// carried on, or answered, by the call with its prompt, and dropped by a
// call with another (the call it belonged to is over: its outer run
// ended without it). Give sub an owner path or an id of its own so that
// its session record and ids do not clash with the outer agent's.
//
// Sub has one history and one interrupt state, so the calls of it that
// the model asks for in one turn run one after another, each to its end,
// while the other tools of the turn run concurrently: the tool is
// tool.Exclusive, keyed by sub's identity (its owner path and id), so
// Braid's executors never run two calls of sub at once (a custom executor
// must honour the key too, see tool.Executor), whatever tool names wrap
// it (an Exclusive option in opts is overridden), and whatever call a
// BeforeToolCall callback routes to it (SetToolUse). When one call stops
// for an interrupt (sub's, or a BeforeToolCall hook's on the call, a call
// routed to sub included), the later calls of sub in that turn do not
// start: the outer agent stops without their questions of sub, and on
// resume the calls run again in tool-use order, so the interrupted call
// resumes sub with its answers first, and only then do the later calls
// run (each asking its own questions, under its own tool-use id). An
// answer thus always reaches the call that asked, and no call starts on
// sub while it waits for another's answer. A callback that routes a call
// to sub must do so in every pass, before it interrupts too: a call it
// routes there only once answered was not known to be sub's while the
// later calls ran. (Strands Python refuses a second call that finds sub
// busy with an error result instead.)
func AsTool(sub *Agent, name, description string, opts ...tool.Option) tool.Tool {
	key := "braid.agent:" + interrupt.OwnedID(sub.core.cfg.OwnerPath, sub.ID())
	opts = append(slices.Clone(opts), tool.Exclusive(key)) // the key is sub's, whatever opts say
	return tool.New(name, description, func(ctx context.Context, tc *tool.Context, in ToolInput) (string, error) {
		st, err := sub.Status(ctx)
		if err != nil {
			return "", err
		}
		input := Text(in.Prompt)
		ours := false
		if st.Interrupted() || st.Incomplete() {
			if ours, err = keepOrDrop(ctx, sub, in.Prompt); err != nil {
				return "", err
			}
		}
		switch {
		case ours && st.Interrupted():
			// Answers given to the outer interrupts go to sub, by id.
			round, err := sincePrompt(ctx, sub)
			if err != nil {
				return "", err
			}
			var answers []interrupt.Response
			var raised error
			for _, si := range st.Interrupts {
				ans, err := tc.Interrupt(askName(si.ID, round), reasonOf(si))
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
		case ours:
			input = Input{} // this call's run, cut off: carried on
		}
		res, err := sub.Invoke(ctx, input)
		if err != nil {
			return "", err
		}
		if res.Interrupted() {
			round, err := sincePrompt(ctx, sub)
			if err != nil {
				return "", err
			}
			var raised error
			for _, si := range res.Interrupts {
				_, err := tc.Interrupt(askName(si.ID, round), reasonOf(si))
				if err == nil {
					// An answer sub was given already: it waits all the same.
					err = fmt.Errorf("agent %q: interrupt_id=<%s> was answered and is asked again", sub.ID(), si.ID)
				}
				if raised == nil {
					raised = err
				}
			}
			return "", raised
		}
		return res.Message.Text(), nil
	}, opts...)
}

// keepOrDrop looks at the run sub holds unfinished (interrupted, or
// Incomplete: a crash or a Close cut it off, or its model call failed
// after its tools ran). When that run's prompt is prompt, it is this
// call's (the outer agent resumes it, or carries its own run on): it is
// kept, and ours is true. Otherwise it is a dead call's (its outer run
// is over, or was dropped): its history is taken back to where it began,
// its interrupts and pending work dropped, so that sub takes prompt.
func keepOrDrop(ctx context.Context, sub *Agent, prompt string) (ours bool, err error) {
	snap, err := sub.Snapshot(ctx)
	if err != nil {
		return false, err
	}
	began := len(snap.Messages)
	for i := len(snap.Messages) - 1; i >= 0; i-- {
		if m := snap.Messages[i]; m.Role == model.RoleUser && len(m.ToolResults()) == 0 {
			began = i
			break
		}
	}
	if began < len(snap.Messages) && snap.Messages[began].Text() == prompt {
		return true, nil
	}
	return false, sub.SetMessages(ctx, snap.Messages[:began], DropUnfinished())
}

// sincePrompt returns how many messages of sub's history follow its last
// prompt (its last user message without tool results): 0 while the
// first question of a call waits, more for each cycle sub finished since.
// A sub interrupt id raised again in one call comes after a finished cycle
// or model turn (SPEC A7 clears the interrupt state only then), so the
// count tells the rounds of a call apart, and it is the same every time
// the outer tool runs while sub waits.
func sincePrompt(ctx context.Context, sub *Agent) (int, error) {
	snap, err := sub.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	for i := len(snap.Messages) - 1; i >= 0; i-- {
		if m := snap.Messages[i]; m.Role == model.RoleUser && len(m.ToolResults()) == 0 {
			return len(snap.Messages) - 1 - i, nil
		}
	}
	return len(snap.Messages), nil
}

// askName is the name of the outer interrupt that asks sub's interrupt id
// in round (see sincePrompt): the id alone in a call's first round.
func askName(id string, round int) string {
	if round == 0 {
		return id
	}
	return id + "@" + strconv.Itoa(round)
}

func reasonOf(in interrupt.Interrupt) any {
	if !in.HasReason() {
		return nil
	}
	return json.RawMessage(in.Reason)
}
