package actors_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/proto/braidv1"
)

// SPEC C1, I1: interrupts and responses cross processes as protobuf, with
// JSON values (null answers included) kept exactly.
func TestWire_InterruptRoundTrip(t *testing.T) {
	null, err := interrupt.JSON([]byte("null"))
	require.NoError(t, err)
	for _, in := range []interrupt.Interrupt{
		{ID: "v1:tool_call:t1:x", Name: "q", Source: interrupt.SourceTool},
		{ID: "id2", Name: "r", Reason: json.RawMessage(`{"paths":["a<b>"]}`), Source: interrupt.SourceHook},
		{ID: "id3", Name: "s", Reason: json.RawMessage(`"why"`), Response: null, Answered: true, Source: interrupt.SourceMultiAgentHook},
	} {
		b, err := proto.Marshal(actors.InterruptToWire(in))
		require.NoError(t, err)
		var w braidv1.Interrupt
		require.NoError(t, proto.Unmarshal(b, &w))
		got, err := actors.InterruptFromWire(&w)
		require.NoError(t, err)
		assert.Equal(t, in, got)
	}
}

func TestWire_RejectsBadInterrupts(t *testing.T) {
	for _, w := range []*braidv1.Interrupt{
		{Name: "no id", Source: "hook"},
		{Id: "x", Source: "nope"},
		{Id: "x", Source: "hook", Reason: []byte("{bad")},
		{Id: "x", Source: "hook", Response: []byte("nul")},
	} {
		_, err := actors.InterruptFromWire(w)
		assert.Error(t, err, w.String())
	}
}

func TestWire_ResponseRoundTrip(t *testing.T) {
	r := interrupt.Respond("v1:before_tools:abc", map[string]any{"approved": true})
	b, err := proto.Marshal(actors.ResponseToWire(r))
	require.NoError(t, err)
	var w braidv1.InterruptResponse
	require.NoError(t, proto.Unmarshal(b, &w))
	got, err := actors.ResponseFromWire(&w)
	require.NoError(t, err)
	assert.Equal(t, r.ID, got.ID)
	assert.JSONEq(t, `{"approved":true}`, string(got.Value.Raw()))

	missing, err := actors.ResponseFromWire(&braidv1.InterruptResponse{InterruptId: "x"})
	require.NoError(t, err)
	st := interrupt.NewState()
	st.Register(interrupt.Interrupt{ID: "x", Name: "n", Source: interrupt.SourceHook})
	st.Activate()
	assert.ErrorIs(t, st.Resume([]interrupt.Response{missing}), interrupt.ErrMissingResponse)
}
