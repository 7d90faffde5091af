package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
)

// A consumer that stops ranging over the stream early ends the request: the
// server sees its request's context done, so no connection is left open.
func TestStream_EarlyBreakClosesTheConnection(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	t.Setenv(anthropic.APIKeyEnv, "")
	t.Setenv(anthropic.BaseURLEnv, "")
	cfg := anthropic.DefaultConfig()
	cfg.Model, cfg.APIKey, cfg.BaseURL, cfg.HTTPClient = "m", "k", srv.URL, srv.Client()
	m, err := anthropic.New(cfg)
	require.NoError(t, err)
	req := &model.Request{Messages: []model.Message{model.UserText("hi")}}
	for ev, err := range m.Stream(context.Background(), req) {
		require.NoError(t, err)
		require.IsType(t, &model.TextDelta{}, ev)
		break
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the request was still open 5s after the consumer stopped")
	}
}
