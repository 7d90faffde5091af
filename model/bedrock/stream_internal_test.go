package bedrock

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
)

// play runs events through a turn and returns what it yielded, and the
// error that handling them returned.
func play(events ...types.ConverseStreamOutput) ([]model.StreamEvent, *turn, error) {
	var out []model.StreamEvent
	t := &turn{yield: func(ev model.StreamEvent, _ error) bool { out = append(out, ev); return true }}
	for _, ev := range events {
		if err := t.handle(ev); err != nil {
			return out, t, err
		}
	}
	return out, t, nil
}

func textDelta(i int32, s string) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{
		ContentBlockIndex: aws.Int32(i), Delta: &types.ContentBlockDeltaMemberText{Value: s}}}
}

func blockStop(i int32) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberContentBlockStop{Value: types.ContentBlockStopEvent{ContentBlockIndex: aws.Int32(i)}}
}

func messageStop(r types.StopReason) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberMessageStop{Value: types.MessageStopEvent{StopReason: r}}
}

func TestTurn_StopReasonsKeepTheirConverseNames(t *testing.T) {
	for reason, want := range map[types.StopReason]model.StopReason{
		types.StopReasonEndTurn:                    model.StopEndTurn,
		types.StopReasonToolUse:                    model.StopToolUse,
		types.StopReasonMaxTokens:                  model.StopMaxTokens,
		types.StopReasonStopSequence:               model.StopSequence,
		types.StopReasonContentFiltered:            model.StopContentFiltered,
		types.StopReasonGuardrailIntervened:        model.StopGuardrailIntervened,
		types.StopReasonModelContextWindowExceeded: model.StopMaxTokens,
		types.StopReason("malformed_tool_use"):     model.StopReason("malformed_tool_use"),
	} {
		_, tr, err := play(textDelta(0, "x"), blockStop(0), messageStop(reason))
		require.NoError(t, err)
		assert.True(t, tr.stopped)
		assert.Equal(t, want, tr.messageStop().StopReason)
	}
}

func TestTurn_SkipsReasoningAndEmptyTextAndStopsOnlyOpenBlocks(t *testing.T) {
	reasoning := &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{
		ContentBlockIndex: aws.Int32(0),
		Delta:             &types.ContentBlockDeltaMemberReasoningContent{Value: &types.ReasoningContentBlockDeltaMemberText{Value: "hmm"}},
	}}
	evs, _, err := play(reasoning, blockStop(0), textDelta(1, ""), textDelta(1, "Hi"), blockStop(1), messageStop(types.StopReasonEndTurn))
	require.NoError(t, err)
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Hi"}, &model.BlockStop{}}, evs)
}

func TestTurn_ToolInputWithoutAStartIsAProtocolError(t *testing.T) {
	delta := &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{
		ContentBlockIndex: aws.Int32(1),
		Delta:             &types.ContentBlockDeltaMemberToolUse{Value: types.ToolUseBlockDelta{Input: aws.String(`{}`)}},
	}}
	_, _, err := play(textDelta(0, "x"), delta)
	var pe *protocolError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "content block 1")
}

func TestTurn_TextAfterAnUnstoppedToolUseClosesIt(t *testing.T) {
	start := &types.ConverseStreamOutputMemberContentBlockStart{Value: types.ContentBlockStartEvent{
		ContentBlockIndex: aws.Int32(0),
		Start:             &types.ContentBlockStartMemberToolUse{Value: types.ToolUseBlockStart{ToolUseId: aws.String("t1"), Name: aws.String("f")}},
	}}
	evs, _, err := play(start, textDelta(1, "after"))
	require.NoError(t, err)
	assert.Equal(t, []model.StreamEvent{
		&model.ToolUseStart{ToolUseID: "t1", Name: "f"}, &model.BlockStop{}, &model.TextDelta{Text: "after"},
	}, evs)
}

func TestTurn_UsageTotalIsComputedWhenMissing(t *testing.T) {
	meta := &types.ConverseStreamOutputMemberMetadata{Value: types.ConverseStreamMetadataEvent{
		Usage: &types.TokenUsage{InputTokens: aws.Int32(7), OutputTokens: aws.Int32(3)},
	}}
	_, tr, err := play(textDelta(0, "x"), messageStop(types.StopReasonEndTurn), meta)
	require.NoError(t, err)
	assert.Equal(t, &model.MessageStop{StopReason: model.StopEndTurn, Usage: model.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}}, tr.messageStop())
}
