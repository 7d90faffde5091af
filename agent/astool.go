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
// A call whose context ends (the outer agent cancelled or closed, its
// caller gone) stops sub's run and returns once that run has stopped, as
// a call of any tool ends with the tool: the next call finds sub idle.
// When sub stops for interrupts, the tool raises one interrupt per sub
// interrupt, with its reason, so the outer agent stops with them; their
// answers are routed back to sub, which resumes (it does not start
// again), then the tool returns sub's answer. The outer interrupt is
// named by the sub interrupt's id when sub asks before its run has added
// a message (in the model's first turn of the call), and "<id>@<n>" when
// it asks later, n the messages sub has added since the call's prompt: an
// id sub asks again in a later cycle of the call (a BeforeTools gate: a
// fresh interrupt, SPEC A7) is then a new question, asked and answered
// once in each cycle. With sessions on both agents this works across processes: sub
// keeps its interrupt state in its own record. Give sub an owner path or
// an id of its own so that its session record and ids do not clash with
// the outer agent's, and give each outer agent a sub agent of its own:
// the calls of one outer agent never overlap on sub (below), but those of
// two outer agents that run at once can, and then one's call can drop
// the other's unfinished run of sub (see "a dead call's" below).
//
// Each call marks the run of sub it starts, in sub's key/value state
// under "braid.call" (the outer call's idempotency key, the id of the
// outer tool cycle, and where the run's prompt is in sub's history),
// saved before the run begins. When the outer agent runs the call again
// (its tool cycle resumed after interrupts, or carried on after a crash
// or a Close cut it off, SPEC S6), the run marked for it, if its prompt
// is the call's (the run may have gone on past it with a prompt of its
// own, that an AfterInvocation callback of sub gave, SPEC A9), is
// resumed with the answers if it waits, carried on if it was cut off,
// and, if it had ended (the cut came after sub's last save and before
// the outer agent saved the call's result), its answer, sub's last
// message, is the call's result: sub does not run again. Any
// other unfinished run of sub is a dead call's (its outer run ended
// without it): the call takes it back to where it began, drops its
// interrupts and pending work, and sub takes the call's prompt. A retry
// that an AfterToolCall hook asks for runs sub again. (A run with no
// mark, of sub invoked directly or by an earlier version, is the call's
// when it is unfinished and its prompt is the call's.) A tool or hook of
// sub that deletes "braid.call" from its state takes that away: after a
// crash, the call then runs sub again.
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
		snap, err := sub.Snapshot(ctx)
		if err != nil {
			return "", err
		}
		info, _ := ctx.Value(callInfoKey{}).(callInfo)
		mark := subCall{Call: tc.IdempotencyKey(), Cycle: info.cycle, At: lastPrompt(snap.Messages)}
		unfinished := st.Interrupted() || st.Incomplete()
		// The run's prompt is the call's: a mark of the same tool-use id
		// is another call's when the outer history was started over
		// (SetMessages) and the model gave that id again.
		var ours bool
		if raw, ok := snap.State[subCallKey]; ok {
			// The run marked for this call, wherever its prompt is: the
			// run may have gone on past it with a prompt of its own (an
			// AfterInvocation callback's Resume), and resumes all the same.
			var was subCall
			ours = info.rerun && json.Unmarshal(raw, &was) == nil && was.Call == mark.Call &&
				was.Cycle == mark.Cycle && promptAt(snap.Messages, was.At, in.Prompt)
			if ours {
				mark.At = was.At
			}
		} else {
			// A run this tool did not mark (a call of an earlier version):
			// this call's if it is unfinished and answers the same prompt.
			ours = unfinished && promptAt(snap.Messages, mark.At, in.Prompt)
		}
		last := len(snap.Messages) - 1
		switch {
		case ours && st.Interrupted():
			// Answers given to the outer interrupts go to sub, by id.
			round := last - mark.At
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
			return answer(ctx, sub, tc, Resume(answers...), mark.At)
		case ours && st.Incomplete():
			return answer(ctx, sub, tc, Input{}, mark.At) // this call's run, cut off: carried on
		case ours && last > mark.At && snap.Messages[last].Role == model.RoleAssistant:
			// This call's run ended, and the call was cut off before its
			// result was saved (a crash, or a Close): its answer is sub's
			// last message, and sub does not run again.
			return snap.Messages[last].Text(), nil
		}
		if unfinished {
			// A dead call's run (its outer run is over, or was dropped):
			// taken back to where it began, its interrupts and pending
			// work dropped, so that sub takes this call's prompt.
			began := min(mark.At, len(snap.Messages))
			if err := sub.SetMessages(ctx, snap.Messages[:began], DropUnfinished()); err != nil {
				return "", err
			}
			mark.At = began
		} else {
			mark.At = len(snap.Messages)
		}
		// Saved before the run begins, so that a call run again after a
		// crash finds its run, whichever save the crash came after.
		if err := sub.SetState(ctx, subCallKey, mark); err != nil {
			return "", err
		}
		return answer(ctx, sub, tc, Text(in.Prompt), mark.At)
	}, opts...)
}

// subCallKey is the key, in a sub agent's state, of the call of AsTool
// its last run belongs to.
const subCallKey = "braid.call"

// subCall identifies the call of AsTool that a sub agent's run belongs
// to: the outer tool use's idempotency key (session, owner path and
// tool-use id), the outer tool cycle's id (Pending.Cycle: a model may
// give the same tool-use id in another cycle), and where the run's
// prompt is in sub's history.
type subCall struct {
	Call  string `json:"call"`
	Cycle string `json:"cycle"`
	At    int    `json:"at"`
}

// callInfo is what a tool call's context tells AsTool about the call:
// its tool cycle's id, and whether the call may be run again after a stop
// or a cut left it without a result (rerun; not a retry an AfterToolCall
// hook asked for, whose earlier result was seen and refused).
type callInfo struct {
	cycle string
	rerun bool
}

type callInfoKey struct{}

// answer invokes sub with input, for the run whose prompt is at index at
// of sub's history, and returns its answer's text; when sub stops for
// interrupts, the call raises them (see AsTool).
func answer(ctx context.Context, sub *Agent, tc *tool.Context, input Input, at int) (string, error) {
	res, err := sub.invokeToEnd(ctx, input)
	if err != nil {
		return "", err
	}
	if !res.Interrupted() {
		return res.Message.Text(), nil
	}
	round := res.History - 1 - at
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

// lastPrompt returns the index of the last prompt in msgs (a user message
// without tool results), or len(msgs) if there is none.
func lastPrompt(msgs []model.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == model.RoleUser && len(m.ToolResults()) == 0 {
			return i
		}
	}
	return len(msgs)
}

// promptAt reports whether msgs[i] is there and says prompt.
func promptAt(msgs []model.Message, i int, prompt string) bool {
	return i >= 0 && i < len(msgs) && msgs[i].Text() == prompt
}

// askName is the name of the outer interrupt that asks sub's interrupt id
// in round, the messages sub's history holds after the call's prompt: 0
// while the first question of a call waits, more for each cycle sub
// finished since. The id alone in a call's first round. A sub interrupt
// id raised again in one call comes after a finished cycle or model turn
// (SPEC A7 clears the interrupt state only then), so the round tells the
// stops of a call apart, and it is the same every time the outer tool
// runs while sub waits.
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
