package agent

import (
	"strconv"

	"github.com/braidhq/braid/model"
)

// uniqueToolUseIDs gives every tool use of msg, a model's answer, an id of
// its own. A model may repeat an id within one answer, and the agent keeps
// a call's result, start mark, interrupts and idempotency key by its id:
// two calls under one id would share them (one approval would let both
// run). The first use of an id keeps it; each later one gets "<id>_<n>",
// with n = 2, 3, ... the first that makes an id no use of msg has (digits
// and '_' are characters every provider's tool-use ids allow). The blocks
// changed are replaced, not written through.
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
			if id := base + "_" + strconv.Itoa(k); !seen[id] {
				tu.ToolUseID = id
				break
			}
		}
		seen[tu.ToolUseID] = true
		msg.Content[i].ToolUse = &tu
	}
}
