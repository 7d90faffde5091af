package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model/openai"
)

// A consumer that stops ranging over the stream early ends the request: the
// server sees its request's context done, so no connection is left open.
func TestStream_EarlyBreakClosesTheConnection(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	cfg := openai.DefaultConfig()
	cfg.Model, cfg.APIKey, cfg.BaseURL, cfg.HTTPClient = "m", "k", srv.URL, srv.Client()
	m, err := openai.New(cfg)
	require.NoError(t, err)
	for _, err := range m.Stream(context.Background(), userRequest()) {
		require.NoError(t, err)
		break
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the request was still open 5s after the consumer stopped")
	}
}
