package interrupt

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRaisedError_MatchesOnlyErrInterrupted(t *testing.T) {
	// SPEC I3
	err := fmt.Errorf("hook: %w", &RaisedError{Interrupt: Interrupt{ID: "i", Name: "approve"}})
	assert.ErrorIs(t, err, ErrInterrupted)
	assert.NotErrorIs(t, err, ErrNotInterrupted)
	assert.NotErrorIs(t, err, ErrDuplicateName)
	var raised *RaisedError
	require.ErrorAs(t, err, &raised)
	assert.Equal(t, "i", raised.Interrupt.ID)
	assert.Equal(t, "hook: interrupt raised: approve", err.Error())
}

func TestIDError_NamesIDAndUnwraps(t *testing.T) {
	// SPEC I7
	tests := []struct {
		sentinel error
		want     string
	}{
		{ErrUnknownID, "interrupt_id=<v1:x> | no interrupt found"},
		{ErrDuplicateResponse, "interrupt_id=<v1:x> | interrupt answered more than once in one resume"},
		{ErrMissingResponse, `interrupt_id=<v1:x> | interrupt response has no "response" field`},
	}
	for _, tt := range tests {
		err := error(&IDError{ID: "v1:x", Err: tt.sentinel})
		assert.Equal(t, tt.want, err.Error())
		assert.ErrorIs(t, err, tt.sentinel)
		assert.Same(t, tt.sentinel, errors.Unwrap(err))
	}
}

func TestContentError_MatchesPromptOrMixed(t *testing.T) {
	// SPEC I7
	prompt := &ContentError{Types: []string{"text"}}
	assert.ErrorIs(t, prompt, ErrResumeRequired)
	assert.NotErrorIs(t, prompt, ErrMixedInput)
	assert.Equal(t, "content_types=<text> | interrupted: resume with interrupt responses, not a prompt", prompt.Error())

	mixed := &ContentError{Types: []string{"image", "text"}, Mixed: true}
	assert.ErrorIs(t, mixed, ErrMixedInput)
	assert.NotErrorIs(t, mixed, ErrResumeRequired)
	assert.Contains(t, mixed.Error(), "content_types=<image,text>")
	assert.Contains(t, mixed.Error(), "resume with interrupt responses only")
}

func TestDuplicateNameError_Message(t *testing.T) {
	// SPEC I4
	err := &DuplicateNameError{Name: "x"}
	assert.Equal(t, "interrupt_name=<x> | interrupt name used more than once", err.Error())
	assert.ErrorIs(t, err, ErrDuplicateName)
	assert.NotErrorIs(t, err, ErrInterrupted)
}
