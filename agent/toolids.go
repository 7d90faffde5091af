package agent

import (
	"strconv"
	"unicode/utf8"

	"github.com/braidhq/braid/model"
)

// uniqueToolUseIDs gives every tool use of msg, a model's answer, an id of
// its own. A model may repeat an id within one answer, and the agent keeps
// a call's result, start mark, interrupts and idempotency key by its id:
// two calls under one id would share them (one approval would let both
// run). The first use of an id keeps it; each later one gets "<id>_<n>",
// with n = 2, 3, ... the first that makes an id no use of msg has (digits
// and '_' are characters every provider's tool-use ids allow). A renamed
// id is no longer than toolUseIDLimit or the model's id, whichever is
// longer: the end of the model's id gives way to the suffix, so an id a
// provider took is not made too long for it when sent back. The blocks
// changed are replaced, not written through.
// toolUseIDLimit is the shortest length limit a provider sets on the
// tool-use ids sent back to it (40 characters; others allow 64).
const toolUseIDLimit = 40

func uniqueToolUseIDs(msg *model.Message) {
	n := 0
	for _, b := range msg.Content {
		if b.ToolUse != nil {
			n++
		}
	}
	if n < 2 {
		return
	}
	seen := make(map[string]bool, n)
	var repeats []int
	for i, b := range msg.Content {
		if b.ToolUse == nil {
			continue
		}
		if seen[b.ToolUse.ToolUseID] {
			repeats = append(repeats, i)
			continue
		}
		seen[b.ToolUse.ToolUseID] = true
	}
	for _, i := range repeats {
		tu := *msg.Content[i].ToolUse
		base := tu.ToolUseID
		for k := 2; ; k++ {
			if id := suffixed(base, "_"+strconv.Itoa(k)); !seen[id] {
				tu.ToolUseID = id
				break
			}
		}
		seen[tu.ToolUseID] = true
		msg.Content[i].ToolUse = &tu
	}
}

// suffixed returns id with suffix appended, the end of id cut (at a rune
// boundary) so the result is no longer than toolUseIDLimit or id.
func suffixed(id, suffix string) string {
	limit := max(len(id), toolUseIDLimit)
	keep := min(len(id), limit-len(suffix))
	for keep > 0 && keep < len(id) && !utf8.RuneStart(id[keep]) {
		keep--
	}
	return id[:max(keep, 0)] + suffix
}
