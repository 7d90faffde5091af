package interrupt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNameUUID_MatchesStrandsVectors(t *testing.T) {
	// SPEC I2
	tests := []struct {
		name string
		want string
	}{
		{"test_name", "78714d6c-613c-5cf4-bf25-7037569941f9"},
		{"test_name_1", "da3551f3-154b-5978-827e-50ac387877ee"},
		{"test_name_2", "0f5a8068-d1ba-5a48-bf67-c9d33786d8d4"},
		{"myapp-approval", "75a96266-45d2-581c-8a6f-043e472e1763"},
		{"approval_a", "aa15d401-a27c-53f3-9e1b-8c0d4545f840"},
		{"approval_b", "fc7d4db5-7c70-583b-86ca-392fc71cadf6"},
		{"cleanup", "4549ff97-60b6-5c86-8183-673620d10794"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, NameUUID(tt.name))
		})
	}
}

func TestIDs_HaveStrandsV1Forms(t *testing.T) {
	// SPEC I2
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"before tool call", BeforeToolCallID("t1", "test_name"),
			"v1:before_tool_call:t1:78714d6c-613c-5cf4-bf25-7037569941f9"},
		{"before tools", BeforeToolsID("approval_a"),
			"v1:before_tools:aa15d401-a27c-53f3-9e1b-8c0d4545f840"},
		{"tool call", ToolCallID("t1", "test_name_1"),
			"v1:tool_call:t1:da3551f3-154b-5978-827e-50ac387877ee"},
		{"tool call other tool use", ToolCallID("tooluse_2", "approval_b"),
			"v1:tool_call:tooluse_2:fc7d4db5-7c70-583b-86ca-392fc71cadf6"},
		{"before node call", BeforeNodeCallID("cleanup", "myapp-approval"),
			"v1:before_node_call:4549ff97-60b6-5c86-8183-673620d10794:75a96266-45d2-581c-8a6f-043e472e1763"},
		{"before model call", BeforeModelCallID("test_name_2"),
			"v1:before_model_call:0f5a8068-d1ba-5a48-bf67-c9d33786d8d4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
		})
	}
}

func TestIDs_AreDeterministicAndDistinct(t *testing.T) {
	// SPEC I2
	makers := map[string]func(name string) string{
		"before_tool_call": func(n string) string { return BeforeToolCallID("t1", n) },
		"before_tools":     BeforeToolsID,
		"before_model":     BeforeModelCallID,
		"tool_call":        func(n string) string { return ToolCallID("t1", n) },
		"before_node_call": func(n string) string { return BeforeNodeCallID("node", n) },
	}
	seen := map[string]string{}
	for kind, mk := range makers {
		assert.Equal(t, mk("approval"), mk("approval"), "%s: same input, same id", kind)
		assert.NotEqual(t, mk("approval"), mk("approval_b"), "%s: names differ", kind)
		id := mk("approval")
		if prev, dup := seen[id]; dup {
			t.Errorf("%s and %s make the same id %q", kind, prev, id)
		}
		seen[id] = kind
	}
	assert.NotEqual(t, BeforeToolCallID("t1", "x"), BeforeToolCallID("t2", "x"), "tool use id is part of the id")
	assert.NotEqual(t, ToolCallID("t1", "x"), ToolCallID("t2", "x"), "tool use id is part of the id")
	assert.NotEqual(t, BeforeNodeCallID("a", "x"), BeforeNodeCallID("b", "x"), "node id is part of the id")
}
