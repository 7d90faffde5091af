package agent

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/braidhq/braid/model"
)

// toolUseIDLimit is the shortest length limit a provider sets on the
// tool-use ids sent back to it (40 characters; others allow 64).
const toolUseIDLimit = 40

// uniqueToolUseIDs gives every tool use of msg, a model's answer, a valid
// UTF-8 id of its own, before the stream, the hooks or the history see it.
//
// An id that is not valid UTF-8 (a custom model.Model, or the scripted
// one, can give any bytes) has each byte that is not part of a UTF-8
// sequence replaced by '_', so it keeps its length: the session stores
// JSON, whose writers would replace those bytes, and the id the caller is
// given (in the stream, in the interrupt ids derived from it) must be the
// one a fresh runtime loads.
//
// A model may also repeat an id within one answer, and the agent keeps a
// call's result, start mark, interrupts and idempotency key by its id: two
// calls under one id would share them (one approval would let both run).
// The first use of an id the model gave valid keeps it, then the first use
// of each id made valid; each later use of an id (or a made-valid id that
// equals one already taken) gets "<id>_<n>", with n = 2, 3, ... the first
// that makes an id no use of msg has (digits and '_' are characters every
// provider's tool-use ids allow). A renamed id is no longer than
// toolUseIDLimit or the model's id, whichever is longer: the end of the
// id gives way to the suffix, so an id a provider took is not made too
// long for it when sent back. The blocks changed are replaced, not written
// through.
func uniqueToolUseIDs(msg *model.Message) {
	n, invalid := 0, false
	for _, b := range msg.Content {
		if b.ToolUse != nil {
			n++
			invalid = invalid || !utf8.ValidString(b.ToolUse.ToolUseID)
		}
	}
	if n < 2 && !invalid {
		return
	}
	seen := make(map[string]bool, n)
	type rename struct {
		i    int
		base string
	}
	var repeats []rename
	for i, b := range msg.Content {
		if b.ToolUse == nil || !utf8.ValidString(b.ToolUse.ToolUseID) {
			continue
		}
		if id := b.ToolUse.ToolUseID; seen[id] {
			repeats = append(repeats, rename{i, id})
		} else {
			seen[id] = true
		}
	}
	if invalid {
		for i, b := range msg.Content {
			if b.ToolUse == nil || utf8.ValidString(b.ToolUse.ToolUseID) {
				continue
			}
			id := validToolUseID(b.ToolUse.ToolUseID)
			if seen[id] {
				repeats = append(repeats, rename{i, id})
				continue
			}
			seen[id] = true
			tu := *b.ToolUse
			tu.ToolUseID = id
			msg.Content[i].ToolUse = &tu
		}
		slices.SortFunc(repeats, func(a, b rename) int { return a.i - b.i })
	}
	for _, r := range repeats {
		tu := *msg.Content[r.i].ToolUse
		for k := 2; ; k++ {
			if id := suffixed(r.base, "_"+strconv.Itoa(k)); !seen[id] {
				tu.ToolUseID = id
				break
			}
		}
		seen[tu.ToolUseID] = true
		msg.Content[r.i].ToolUse = &tu
	}
}

// validToolUseID returns id with each byte that is not part of a UTF-8
// sequence replaced by '_'.
func validToolUseID(id string) string {
	out := make([]byte, 0, len(id))
	for len(id) > 0 {
		r, size := utf8.DecodeRuneInString(id)
		if r == utf8.RuneError && size == 1 {
			out = append(out, '_')
		} else {
			out = append(out, id[:size]...)
		}
		id = id[size:]
	}
	return string(out)
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
