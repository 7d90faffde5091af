package openai_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model/openai"
)

const (
	testKey   = "test-key"
	testModel = "gpt-4o-mini"
)

// exchange is one recorded request and the answer to it.
type exchange struct {
	// request is the body the provider must send (JSON, compared with
	// JSONEq); nil: not checked.
	request []byte
	// response is the raw HTTP response: status line, headers, blank line,
	// body (for a stream, the SSE text as the API sends it).
	response []byte
	// hold keeps the connection open after the body until the client goes
	// away (a model that stops sending mid-stream).
	hold bool
	// cut closes the connection after the body without ending the chunked
	// response (a connection that breaks).
	cut bool
}

// loadExchanges reads testdata/<scenario>/<n>.request.json and
// <n>.response.http for n = 1, 2...
func loadExchanges(t *testing.T, scenario string) []exchange {
	t.Helper()
	var out []exchange
	for n := 1; ; n++ {
		base := filepath.Join("testdata", scenario, fmt.Sprint(n))
		res, err := os.ReadFile(base + ".response.http")
		if os.IsNotExist(err) {
			break
		}
		require.NoError(t, err)
		req, err := os.ReadFile(base + ".request.json")
		require.NoError(t, err, "exchange %d of %s has no request", n, scenario)
		out = append(out, exchange{request: req, response: res})
	}
	require.NotEmpty(t, out, "no exchanges under testdata/%s", scenario)
	return out
}

// replay is a Chat Completions server on 127.0.0.1 that answers request n
// with exchange n (the last one for every request past the end) and checks
// what the provider sent.
type replay struct {
	t         *testing.T
	exchanges []exchange
	// wantAuth is the Authorization header every request must carry.
	wantAuth string
	srv      *httptest.Server

	mu       sync.Mutex
	requests [][]byte
}

// newReplay starts a server for the scenario's recorded exchanges.
func newReplay(t *testing.T, scenario string) *replay {
	t.Helper()
	r := &replay{t: t, exchanges: loadExchanges(t, scenario), wantAuth: "Bearer " + testKey}
	for i := range r.exchanges {
		// Slow sends its first delta, then nothing until the caller leaves.
		r.exchanges[i].hold = scenario == "slow"
	}
	r.start()
	return r
}

// newInline starts a server for exchanges written in the test (wire shapes
// built for one behaviour, whose requests are not checked).
func newInline(t *testing.T, exchanges ...exchange) *replay {
	t.Helper()
	r := &replay{t: t, exchanges: exchanges, wantAuth: "Bearer " + testKey}
	r.start()
	return r
}

func (r *replay) start() {
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.t.Cleanup(r.srv.Close)
}

// url is the base URL a provider is configured with.
func (r *replay) url() string { return r.srv.URL + "/v1" }

// requestBodies returns the bodies received, in order.
func (r *replay) requestBodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.requests...)
}

func (r *replay) serve(w http.ResponseWriter, req *http.Request) {
	t := r.t
	body, err := io.ReadAll(req.Body)
	if !assert.NoError(t, err) {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	assert.Equal(t, http.MethodPost, req.Method)
	assert.Equal(t, "/v1/chat/completions", req.URL.Path)
	assert.Equal(t, r.wantAuth, req.Header.Get("Authorization"))
	assert.Contains(t, req.Header.Get("Content-Type"), "application/json")

	r.mu.Lock()
	r.requests = append(r.requests, body)
	n := len(r.requests)
	r.mu.Unlock()
	ex := r.exchanges[min(n, len(r.exchanges))-1]
	if ex.request != nil {
		assert.JSONEq(t, string(ex.request), string(body), "request %d", n)
	}

	res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(ex.response)), nil)
	if !assert.NoError(t, err, "exchange %d: bad response file", n) {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	raw, err := io.ReadAll(res.Body)
	assert.NoError(t, err)
	// Send the SSE events one by one, as the API does.
	flusher := w.(http.Flusher)
	for _, ev := range strings.SplitAfter(string(raw), "\n\n") {
		if ev == "" {
			continue
		}
		if _, err := io.WriteString(w, ev); err != nil {
			return
		}
		flusher.Flush()
	}
	switch {
	case ex.hold:
		<-req.Context().Done()
	case ex.cut:
		conn, _, err := w.(http.Hijacker).Hijack()
		if assert.NoError(t, err) {
			conn.Close()
		}
	}
}

// newModel returns a provider configured for the server, with tiny retry
// waits; edit adjusts the config.
func newModel(t *testing.T, r *replay, edit ...func(*openai.Config)) *openai.Model {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	cfg := openai.DefaultConfig()
	cfg.Model = testModel
	cfg.APIKey = testKey
	cfg.BaseURL = r.url()
	cfg.HTTPClient = r.srv.Client()
	cfg.RetryBaseDelay = 2 * time.Millisecond
	for _, e := range edit {
		e(&cfg)
	}
	m, err := openai.New(cfg)
	require.NoError(t, err)
	return m
}

// Builders of inline wire shapes, in the format of the recorded fixtures.

// sse is a 200 event-stream response whose events carry the given data.
func sse(data ...string) exchange {
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\nContent-Type: text/event-stream; charset=utf-8\n\n")
	for _, d := range data {
		b.WriteString("data: " + d + "\n\n")
	}
	return exchange{response: []byte(b.String())}
}

// httpError is an error response with a JSON body; headers are "Key: value"
// lines.
func httpError(status int, body string, headers ...string) exchange {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\nContent-Type: application/json\n", status, http.StatusText(status))
	for _, h := range headers {
		b.WriteString(h + "\n")
	}
	b.WriteString("\n" + body)
	return exchange{response: []byte(b.String())}
}

const done = "[DONE]"

func chunk(choices string, usage string) string {
	return `{"id":"chatcmpl-inline","object":"chat.completion.chunk","created":1736942400,"model":"gpt-4o-mini","choices":` + choices + `,"usage":` + usage + `}`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// text is a chunk with a content delta.
func text(s string) string {
	return chunk(`[{"index":0,"delta":{"content":`+jsonString(s)+`},"finish_reason":null}]`, "null")
}

// toolStart is a chunk that starts tool call index with its id and name.
func toolStart(index int, id, name, args string) string {
	return chunk(fmt.Sprintf(`[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}]},"finish_reason":null}]`,
		index, jsonString(id), jsonString(name), jsonString(args)), "null")
}

// toolArgs is a chunk with an argument fragment of tool call index.
func toolArgs(index int, args string) string {
	return chunk(fmt.Sprintf(`[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"finish_reason":null}]`,
		index, jsonString(args)), "null")
}

// finish is the chunk with the choice's finish_reason.
func finish(reason string) string {
	return chunk(`[{"index":0,"delta":{},"finish_reason":`+jsonString(reason)+`}]`, "null")
}

// usage is the final usage chunk (no choices).
func usage(prompt, completion int) string {
	return chunk("[]", fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, completion, prompt+completion))
}
