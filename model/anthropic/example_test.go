package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
)

// exampleStream is what the Messages API streams for a one-line answer.
const exampleStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_01Example","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello!"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}

event: message_stop
data: {"type":"message_stop"}

`

func Example() {
	// A stand-in for the API, so that the example runs offline.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, exampleStream)
	}))
	defer api.Close()

	cfg := anthropic.DefaultConfig()
	cfg.Model = "claude-sonnet-4-5"
	cfg.APIKey = "sk-ant-example" // default: $ANTHROPIC_API_KEY
	cfg.BaseURL = api.URL         // default: the Anthropic API
	m, err := anthropic.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}

	msg, stop, err := model.Complete(context.Background(), m, &model.Request{
		SystemPrompt: "Answer in two words at most.",
		Messages:     []model.Message{model.UserText("Say hello.")},
	})
	if errors.Is(err, model.ErrRateLimited) {
		fmt.Println("still rate limited after the retries:", err)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(msg.Text())
	fmt.Println(stop.StopReason, stop.Usage.TotalTokens)
	// Output:
	// Hello!
	// end_turn 12
}
