package anthropic_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

	"github.com/braidhq/braid/model/anthropic"
)

// exchange is one recorded request and its response, from
// testdata/<scenario>/<n>.request.json and <n>.response.http (see
// testdata/README.md).
type exchange struct {
	name    string
	request []byte // the expected request body (JSON)
	status  int
	header  http.Header
	body    []byte
	hold    bool // <n>.hold: keep the connection open after the body until the client goes away
	abort   bool // <n>.abort: drop the connection after the body
}

// replay is an httptest server on 127.0.0.1 that answers request n of a
// scenario with its exchange n (the last one for every later request when
// the scenario has one exchange) and records what it was sent.
type replay struct {
	t         *testing.T
	scenario  string
	exchanges []exchange
	srv       *httptest.Server
	quit      chan struct{}

	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	paths    []string
	received []time.Time
}

// newReplay serves testdata/<scenario>. When the test ends it checks that
// each request went to POST /v1/messages with the body its exchange expects.
func newReplay(t *testing.T, scenario string) *replay {
	t.Helper()
	r := &replay{t: t, scenario: scenario, exchanges: loadExchanges(t, scenario), quit: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		close(r.quit)
		r.srv.Close()
		r.checkRequests()
	})
	return r
}

func loadExchanges(t *testing.T, scenario string) []exchange {
	t.Helper()
	dir := filepath.Join("testdata", scenario)
	var out []exchange
	for n := 1; ; n++ {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.response.http", n)))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		require.NoError(t, err, "%s/%d.response.http", scenario, n)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		ex := exchange{name: fmt.Sprintf("%s/%d", scenario, n), status: res.StatusCode, header: res.Header, body: body}
		ex.request, err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.request.json", n)))
		require.NoError(t, err, "every exchange has its expected request")
		ex.hold = exists(filepath.Join(dir, fmt.Sprintf("%d.hold", n)))
		ex.abort = exists(filepath.Join(dir, fmt.Sprintf("%d.abort", n)))
		out = append(out, ex)
	}
	require.NotEmpty(t, out, "no exchanges in %s", dir)
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// exchangeFor returns the exchange that answers request n (0-based).
func (r *replay) exchangeFor(n int) (exchange, bool) {
	if len(r.exchanges) == 1 {
		return r.exchanges[0], true
	}
	if n < len(r.exchanges) {
		return r.exchanges[n], true
	}
	return exchange{}, false
}

func (r *replay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.bodies)
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	r.paths = append(r.paths, req.Method+" "+req.URL.Path)
	r.received = append(r.received, time.Now())
	ex, ok := r.exchangeFor(n)
	r.mu.Unlock()

	if !ok {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"replay: no exchange left"}}`, http.StatusTeapot)
		return
	}
	for k, vs := range ex.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(ex.status)
	flusher, _ := w.(http.Flusher)
	// Send the stream event by event, as the API does.
	for _, chunk := range bytes.SplitAfter(ex.body, []byte("\n\n")) {
		if len(chunk) == 0 {
			continue
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	switch {
	case ex.hold:
		select {
		case <-req.Context().Done():
		case <-r.quit:
		}
	case ex.abort:
		panic(http.ErrAbortHandler)
	}
}

// checkRequests compares every request with its exchange's expected one.
func (r *replay) checkRequests() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, body := range r.bodies {
		assert.Equal(r.t, "POST /v1/messages", r.paths[n], "request %d of %s", n+1, r.scenario)
		ex, ok := r.exchangeFor(n)
		if !assert.True(r.t, ok, "%s: request %d has no exchange (only %d recorded)", r.scenario, n+1, len(r.exchanges)) {
			continue
		}
		assert.JSONEq(r.t, string(ex.request), string(body), "request %d of %s (%s.request.json)", n+1, r.scenario, ex.name)
	}
}

// Expect replaces the expected request body of exchange n (0-based), for a
// test that sends a variant of the recorded request.
func (r *replay) Expect(n int, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges[n].request = body
}

// Requests returns the request bodies received so far.
func (r *replay) Requests() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// Count returns how many requests were received.
func (r *replay) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// Header returns the headers of request n (0-based).
func (r *replay) Header(n int) http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[n]
}

// Received returns when each request arrived.
func (r *replay) Received() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.received...)
}

// testAPIKey is the fake key the tests' models send.
const testAPIKey = "sk-ant-test-0000"

// testConfig is the configuration the fixtures' expected requests were
// written for: model claude-sonnet-4-5, max_tokens 1024, temperature 0.2,
// and retries a few milliseconds apart.
func testConfig(r *replay) anthropic.Config {
	temp := 0.2
	cfg := anthropic.DefaultConfig()
	cfg.Model = "claude-sonnet-4-5"
	cfg.APIKey = testAPIKey
	cfg.BaseURL = r.srv.URL
	cfg.HTTPClient = r.srv.Client()
	cfg.MaxTokens = 1024
	cfg.Temperature = &temp
	cfg.RetryBaseDelay = 2 * time.Millisecond
	cfg.Timeout = 30 * time.Second
	return cfg
}

// clearEnv makes sure nothing is read from the developer's environment.
func clearEnv(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "")
	t.Setenv(anthropic.BaseURLEnv, "")
}

// newModel serves scenario and returns a model configured by testConfig,
// changed by tweak when not nil.
func newModel(t *testing.T, scenario string, tweak func(*anthropic.Config)) (*anthropic.Model, *replay) {
	t.Helper()
	clearEnv(t)
	r := newReplay(t, scenario)
	cfg := testConfig(r)
	if tweak != nil {
		tweak(&cfg)
	}
	m, err := anthropic.New(cfg)
	require.NoError(t, err)
	return m, r
}

// readFixture returns testdata/<path>.
func readFixture(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", path))
	require.NoError(t, err)
	return strings.TrimSpace(string(raw))
}
