package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/examples/internal/seedtest"
)

func TestApprovalExample(t *testing.T) {
	for _, tc := range []struct {
		name, args, stdin string
		want              []string
	}{
		{"flag yes", "-answer y", "", []string{"Do you want to delete [a/b/c.txt d/e/f.txt] (y/N): y", `MESSAGE: {"role":"assistant","content":[{"text":"Deleted [a/b/c.txt d/e/f.txt]."}]}`, "deleted: [a/b/c.txt d/e/f.txt]"}},
		{"flag no", "-answer n", "", []string{"did not delete them: User denied permission to delete files", "deleted: []"}},
		{"terminal yes", "", "Y\n", []string{"Deleted [a/b/c.txt d/e/f.txt].", "deleted: [a/b/c.txt d/e/f.txt]"}},
		{"terminal end of input", "", "", []string{"User denied permission", "deleted: []"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BRAID_ANSWER", "")
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), strings.Fields(tc.args), strings.NewReader(tc.stdin), &out))
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}

func TestApprovalExample_EnvAnswer(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "y")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), nil, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "deleted: [a/b/c.txt d/e/f.txt]")
}

// The --model flag: the same example against an OpenAI-compatible server
// (a local fake that plays the conversation in the Chat Completions
// streaming format), found through OPENAI_BASE_URL as a user would point it
// at Ollama or vLLM.
func TestApprovalExample_OpenAICompatibleModel(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string, finish string) {
			fin := "null"
			if finish != "" {
				fin = `"` + finish + `"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, fin)
		}
		if n == 1 {
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_i","type":"function","function":{"name":"inspect_files","arguments":"{\"paths\":[\"a/b/c.txt\",\"d/e/f.txt\"]}"}}]}`, "")
			chunk(`{"tool_calls":[{"index":1,"id":"call_d","type":"function","function":{"name":"delete_files","arguments":"{\"paths\":[\"a/b/c.txt\",\"d/e/f.txt\"]}"}}]}`, "")
			chunk(`{}`, "tool_calls")
		} else {
			chunk(`{"role":"assistant","content":"Both files are gone."}`, "")
			chunk(`{}`, "stop")
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("BRAID_ANSWER", "")

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-answer", "y", "--model", "openai:fake"}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "Do you want to delete [a/b/c.txt d/e/f.txt] (y/N): y")
	assert.Contains(t, out.String(), "Both files are gone.")
	assert.Contains(t, out.String(), "deleted: [a/b/c.txt d/e/f.txt]")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 2, "one call before the interrupt, one after the resume ran the tools")
	assert.Equal(t, "fake", bodies[0]["model"])
	msgs := bodies[1]["messages"].([]any)
	var toolIDs []string
	for _, m := range msgs {
		if mm := m.(map[string]any); mm["role"] == "tool" {
			toolIDs = append(toolIDs, mm["tool_call_id"].(string))
		}
	}
	assert.Equal(t, []string{"call_i", "call_d"}, toolIDs, "the resume sends both results, in order")
}

func TestApprovalExample_BadModelFlag(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-answer", "y", "-model", "gpt-4o"}, strings.NewReader(""), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "openai:<model>")
}

// What a user of the command sees: -h prints the usage and exits 0,
// without an error; a mistyped flag, or an answer given as an argument
// instead of with -answer, exits 2 (a usage error: nothing ran).
func TestHelpExitsZeroAndBadCommandLineExitsTwo(t *testing.T) {
	seedtest.CheckCommandLine(t, main)
}
