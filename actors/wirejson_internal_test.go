package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/proto/braidv1"
)

// SPEC S5: every bytes field of a stored protobuf form is JSON; one that is
// not is found at any depth, in lists too, and named.
func TestCheckWireJSON_FindsBytesThatAreNotJSONAtAnyDepth(t *testing.T) {
	good := func() *braidv1.NodeResult {
		return &braidv1.NodeResult{NodeId: "a", Result: &braidv1.NodeResult_Agent{Agent: &braidv1.AgentResult{
			Message:    []byte(`{"role":"assistant","content":[]}`),
			Interrupts: []*braidv1.Interrupt{{Id: "i", Reason: []byte(`{"x":1}`)}, {Id: "j"}}}},
			Handoff: &braidv1.Handoff{To: "b", Context: []byte(`{"k":"v"}`)}}
	}
	require.NoError(t, checkWireJSON(good().ProtoReflect()))
	for _, c := range []struct {
		name  string
		spoil func(*braidv1.NodeResult)
		want  string
	}{
		{"message", func(r *braidv1.NodeResult) { r.GetAgent().Message = []byte(`{"role":`) }, "message"},
		{"second interrupt's reason", func(r *braidv1.NodeResult) { r.GetAgent().Interrupts[1].Reason = []byte(`{`) }, "interrupts[1]: reason"},
		{"handoff context", func(r *braidv1.NodeResult) { r.Handoff.Context = []byte(`|||`) }, "context"},
	} {
		r := good()
		c.spoil(r)
		err := checkWireJSON(r.ProtoReflect())
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}
