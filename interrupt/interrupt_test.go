package interrupt

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answered returns an Interrupt answered with the given JSON text.
func answered(t *testing.T, in Interrupt, answerJSON string) Interrupt {
	t.Helper()
	v, err := JSON([]byte(answerJSON))
	require.NoError(t, err)
	in.Response, in.Answered = v, true
	return in
}

func TestInterrupt_MarshalJSON_WireForm(t *testing.T) {
	// SPEC I1
	base := Interrupt{ID: "v1:tool_call:t1:x", Name: "approve", Source: SourceTool}
	withReason := base
	withReason.Reason = json.RawMessage(`{"msg":"<b>delete</b> a & b?"}`)

	tests := []struct {
		name string
		in   Interrupt
		want string
	}{
		{"unanswered without reason omits both", base,
			`{"id":"v1:tool_call:t1:x","name":"approve","source":"tool"}`},
		{"reason kept, HTML not escaped", withReason,
			`{"id":"v1:tool_call:t1:x","name":"approve","reason":{"msg":"<b>delete</b> a & b?"},"source":"tool"}`},
		{"null answer is written as null", answered(t, base, `null`),
			`{"id":"v1:tool_call:t1:x","name":"approve","response":null,"source":"tool"}`},
		{"false answer is written", answered(t, base, `false`),
			`{"id":"v1:tool_call:t1:x","name":"approve","response":false,"source":"tool"}`},
		{"empty string answer is written", answered(t, base, `""`),
			`{"id":"v1:tool_call:t1:x","name":"approve","response":"","source":"tool"}`},
		{"answer with HTML characters", answered(t, withReason, `"<yes> & <no>"`),
			`{"id":"v1:tool_call:t1:x","name":"approve","reason":{"msg":"<b>delete</b> a & b?"},"response":"<yes> & <no>","source":"tool"}`},
		{"multiagent source", Interrupt{ID: "i", Name: "n", Source: SourceMultiAgentHook},
			`{"id":"i","name":"n","source":"multiagent-hook"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestInterrupt_MarshalJSON_UnansweredIgnoresStaleResponse(t *testing.T) {
	// SPEC I1: "no answer" is the flag, not the value.
	in := answered(t, Interrupt{ID: "i", Name: "n", Source: SourceHook}, `"yes"`)
	in.Answered = false
	got, err := in.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"id":"i","name":"n","source":"hook"}`, string(got))
}

func TestInterrupt_UnmarshalJSON_ReadsWireForm(t *testing.T) {
	// SPEC I1
	tests := []struct {
		name         string
		data         string
		wantSource   Source
		wantAnswered bool
		wantResponse string // JSON text; "" for none
		wantReason   string // JSON text; "" for none
	}{
		{"unanswered", `{"id":"i","name":"n","source":"tool"}`, SourceTool, false, "", ""},
		{"missing source reads as hook", `{"id":"i","name":"n"}`, SourceHook, false, "", ""},
		{"empty source reads as hook", `{"id":"i","name":"n","source":""}`, SourceHook, false, "", ""},
		{"null response is an answer", `{"id":"i","name":"n","response":null,"source":"hook"}`, SourceHook, true, "null", ""},
		{"false response is an answer", `{"id":"i","name":"n","response":false,"source":"hook"}`, SourceHook, true, "false", ""},
		{"object response", `{"id":"i","name":"n","response":{"a":[1,2]},"source":"multiagent-hook"}`, SourceMultiAgentHook, true, `{"a":[1,2]}`, ""},
		{"reason kept", `{"id":"i","name":"n","reason":"why <not>?","source":"tool"}`, SourceTool, false, "", `"why <not>?"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in Interrupt
			require.NoError(t, json.Unmarshal([]byte(tt.data), &in))
			assert.Equal(t, "i", in.ID)
			assert.Equal(t, "n", in.Name)
			assert.Equal(t, tt.wantSource, in.Source)
			assert.Equal(t, tt.wantAnswered, in.Answered)
			if tt.wantResponse == "" {
				assert.False(t, in.Response.Valid(), "no answer held")
			} else {
				assert.JSONEq(t, tt.wantResponse, string(in.Response.Raw()))
			}
			if tt.wantReason == "" {
				assert.False(t, in.HasReason())
			} else {
				assert.JSONEq(t, tt.wantReason, string(in.Reason))
			}
		})
	}
}

func TestInterrupt_UnmarshalJSON_Rejects(t *testing.T) {
	// SPEC I1
	tests := []struct {
		name    string
		data    string
		wantIs  error  // sentinel, or nil
		wantMsg string // substring of the message, or ""
	}{
		{"empty id", `{"id":"","name":"n","source":"hook"}`, ErrEmptyID, ""},
		{"missing id", `{"name":"n","source":"hook"}`, ErrEmptyID, ""},
		{"unknown source", `{"id":"i","name":"n","source":"webhook"}`, nil, `unknown source "webhook"`},
		{"source with other case", `{"id":"i","name":"n","source":"Tool"}`, nil, "unknown source"},
		{"not an object", `["i"]`, nil, ""},
		{"bad field type", `{"id":1,"name":"n"}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in Interrupt
			err := json.Unmarshal([]byte(tt.data), &in)
			require.Error(t, err)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			if tt.wantMsg != "" {
				assert.Contains(t, err.Error(), tt.wantMsg)
			}
		})
	}
}

func TestInterrupt_JSONRoundTrip(t *testing.T) {
	// SPEC I1
	ins := []Interrupt{
		{ID: "a", Name: "n", Source: SourceHook},
		{ID: "b", Name: "n", Reason: json.RawMessage(`{"x":"<&>"}`), Source: SourceTool},
		answered(t, Interrupt{ID: "c", Name: "n", Source: SourceMultiAgentHook}, `null`),
		answered(t, Interrupt{ID: "d", Name: "n", Reason: json.RawMessage(`[1]`), Source: SourceTool}, `{"ok":true}`),
	}
	for _, in := range ins {
		t.Run(in.ID, func(t *testing.T) {
			b, err := in.MarshalJSON()
			require.NoError(t, err)
			var got Interrupt
			require.NoError(t, json.Unmarshal(b, &got))
			assert.Equal(t, in, got)
			again, err := got.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, string(b), string(again))
		})
	}
}

func TestInterrupt_DecodeReason(t *testing.T) {
	// SPEC I1
	in := Interrupt{ID: "i", Name: "n", Reason: json.RawMessage(`{"tool":"rm","args":["-rf"]}`)}
	require.True(t, in.HasReason())
	var got struct {
		Tool string   `json:"tool"`
		Args []string `json:"args"`
	}
	require.NoError(t, in.DecodeReason(&got))
	assert.Equal(t, "rm", got.Tool)
	assert.Equal(t, []string{"-rf"}, got.Args)

	none := Interrupt{ID: "j", Name: "n"}
	assert.False(t, none.HasReason())
	err := none.DecodeReason(&got)
	assert.ErrorIs(t, err, ErrNoReason)
	assert.Contains(t, err.Error(), "interrupt_id=<j>")
}

func TestInterrupt_Clone_IsDeep(t *testing.T) {
	in := answered(t, Interrupt{ID: "i", Name: "n", Reason: json.RawMessage(`"abc"`)}, `"yes"`)
	c := in.Clone()
	require.Equal(t, in, c)
	c.Reason[1] = 'X'
	c.Response.raw[1] = 'N'
	assert.Equal(t, `"abc"`, string(in.Reason))
	assert.Equal(t, `"yes"`, string(in.Response.Raw()))
}

func TestSource_Valid(t *testing.T) {
	// SPEC I1
	tests := []struct {
		s    Source
		want bool
	}{
		{SourceTool, true},
		{SourceHook, true},
		{SourceMultiAgentHook, true},
		{"", false},
		{"multiagent_hook", false},
		{"HOOK", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.s.Valid(), "Source(%q).Valid()", tt.s)
	}
}
