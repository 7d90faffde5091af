package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/proto/braidv1"
)

// SPEC S5: every bytes field of a stored protobuf form is JSON, and the
// ones that hold a message hold one as stored; one that does not is found
// at any depth, in lists too, and named.
func TestCheckWireJSON_FindsBytesThatAreNotTheirJSONAtAnyDepth(t *testing.T) {
	good := func() *braidv1.NodeResult {
		return &braidv1.NodeResult{NodeId: "a", Result: &braidv1.NodeResult_Agent{Agent: &braidv1.AgentResult{
			Message:    []byte(`{"role":"assistant","content":[]}`),
			Interrupts: []*braidv1.Interrupt{{Id: "i", Reason: []byte(`{"x":1}`)}, {Id: "j"}}}},
			Handoff: &braidv1.Handoff{To: "b", Context: []byte(`{"k":"v"}`)}}
	}
	require.NoError(t, checkWireJSON(good().ProtoReflect()))
	in := &braidv1.AgentInput{Messages: [][]byte{[]byte(`{"role":"user","content":[{"text":"hi"}]}`)}}
	require.NoError(t, checkWireJSON(in.ProtoReflect()))
	in.Messages = append(in.Messages, []byte(`{"role":"user","content":[{"text":"hi"}],"extra":1}`))
	err := checkWireJSON(in.ProtoReflect())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "messages[1]")
	for _, c := range []struct {
		name  string
		spoil func(*braidv1.NodeResult)
		want  string
	}{
		{"message", func(r *braidv1.NodeResult) { r.GetAgent().Message = []byte(`{"role":`) }, "message"},
		{"second interrupt's reason", func(r *braidv1.NodeResult) { r.GetAgent().Interrupts[1].Reason = []byte(`{`) }, "interrupts[1]: reason"},
		{"message with a renamed key", func(r *braidv1.NodeResult) { r.GetAgent().Message = []byte(`{"rol":"assistant","content":[]}`) }, "message"},
		{"handoff context", func(r *braidv1.NodeResult) { r.Handoff.Context = []byte(`|||`) }, "context"},
	} {
		r := good()
		c.spoil(r)
		err := checkWireJSON(r.ProtoReflect())
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}
