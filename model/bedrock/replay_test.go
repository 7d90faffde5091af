package bedrock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/bedrock"
)

// The model id and region of the recorded exchanges.
const (
	testModel  = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	testRegion = "us-east-1"
)

// An exchange is one recorded request and its answer, read from
// testdata/<scenario>/<n>.request.json and <n>.events.jsonl (a ConverseStream
// answer: one event a line) or <n>.error.json (an HTTP error answer).
type exchange struct {
	request json.RawMessage // the body the provider must send
	events  []frame         // a 200 event-stream answer, or
	failure *httpError      // an error answer
}

// frame is one line of an events file: an event ({"event": type,
// "payload": {..}}), an exception ({"exception": type, "payload": {..}}), or
// {"hold": true}: send nothing more until the client goes away.
type frame struct {
	Event     string          `json:"event"`
	Exception string          `json:"exception"`
	Payload   json.RawMessage `json:"payload"`
	Hold      bool            `json:"hold"`
}

// httpError is an error answer: status, headers (x-amzn-ErrorType) and JSON
// body.
type httpError struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// loadScenario reads the exchanges of testdata/<scenario>, 1.* to n.*.
func loadScenario(scenario string) ([]exchange, error) {
	dir := filepath.Join("testdata", scenario)
	var out []exchange
	for n := 1; ; n++ {
		base := filepath.Join(dir, strconv.Itoa(n))
		req, err := os.ReadFile(base + ".request.json")
		if os.IsNotExist(err) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !json.Valid(req) {
			return nil, fmt.Errorf("%s.request.json is not JSON", base)
		}
		ex := exchange{request: req}
		if raw, err := os.ReadFile(base + ".error.json"); err == nil {
			ex.failure = &httpError{}
			if err := json.Unmarshal(raw, ex.failure); err != nil {
				return nil, fmt.Errorf("%s.error.json: %w", base, err)
			}
		} else if ex.events, err = readEvents(base + ".events.jsonl"); err != nil {
			return nil, fmt.Errorf("exchange %s has neither an error file nor a valid events file: %w", base, err)
		}
		out = append(out, ex)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no exchanges in %s", dir)
	}
	return out, nil
}

// readEvents reads an events file, one frame a line.
func readEvents(path string) ([]frame, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []frame
	for i, line := range bytes.Split(raw, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		var fr frame
		if err := json.Unmarshal(line, &fr); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, fr)
	}
	return out, nil
}

// replay is a local Bedrock that answers a scenario's requests with its
// recorded exchanges, in order (a scenario of one exchange answers every
// request with it), and checks each request's path and body.
type replay struct {
	t         assert.TestingT
	model     string
	exchanges []exchange
	srv       *httptest.Server
	done      chan struct{} // closed at cleanup: held answers end
	// gone gets a value when a held answer sees its client go away.
	gone chan struct{}
	// answered gets a value each time an answer has been written in full
	// (up to 8 unread; later ones are dropped).
	answered chan struct{}

	mu       sync.Mutex
	requests []recorded
}

// recorded is a request the provider sent.
type recorded struct {
	Path   string // escaped
	Header http.Header
	Body   []byte
}

func newReplay(t *testing.T, scenario, modelID string) *replay {
	t.Helper()
	exchanges, err := loadScenario(scenario)
	require.NoError(t, err)
	r := startReplay(t, exchanges, modelID)
	t.Cleanup(r.Close)
	return r
}

// startReplay serves exchanges, reporting unexpected requests to t, until
// Close.
func startReplay(t assert.TestingT, exchanges []exchange, modelID string) *replay {
	r := &replay{t: t, model: modelID, exchanges: exchanges, done: make(chan struct{}), gone: make(chan struct{}, 8), answered: make(chan struct{}, 8)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// newTLSReplay is newReplay over HTTPS; r.srv.Client() trusts it.
func newTLSReplay(t *testing.T, scenario, modelID string) *replay {
	t.Helper()
	exchanges, err := loadScenario(scenario)
	require.NoError(t, err)
	r := &replay{t: t, model: modelID, exchanges: exchanges, done: make(chan struct{}), gone: make(chan struct{}, 8), answered: make(chan struct{}, 8)}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// Close ends held answers and stops the server.
func (r *replay) Close() {
	close(r.done)
	r.srv.Close()
}

// Requests returns the requests received so far.
func (r *replay) Requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.requests...)
}

func (r *replay) serve(w http.ResponseWriter, req *http.Request) {
	defer func() {
		select {
		case r.answered <- struct{}{}:
		default:
		}
	}()
	body, err := io.ReadAll(req.Body)
	if !assert.NoError(r.t, err) {
		return
	}
	r.mu.Lock()
	n := len(r.requests)
	r.requests = append(r.requests, recorded{Path: req.URL.EscapedPath(), Header: req.Header.Clone(), Body: body})
	r.mu.Unlock()

	var ex exchange
	switch {
	case n < len(r.exchanges):
		ex = r.exchanges[n]
	case len(r.exchanges) == 1:
		ex = r.exchanges[0]
	default:
		r.t.Errorf("request %d: the scenario has only %d exchanges", n+1, len(r.exchanges))
		http.Error(w, "no more exchanges", http.StatusInternalServerError)
		return
	}
	assert.Equal(r.t, http.MethodPost, req.Method)
	assert.Equal(r.t, "/model/"+escapeLabel(r.model)+"/converse-stream", req.URL.EscapedPath(), "request %d path", n+1)
	assert.JSONEq(r.t, string(ex.request), string(body), "request %d body", n+1)

	w.Header().Set("x-amzn-RequestId", fmt.Sprintf("00000000-0000-4000-8000-%012d", n+1))
	if f := ex.failure; f != nil {
		for k, v := range f.Headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		_, _ = w.Write(f.Body)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := eventstream.NewEncoder()
	for _, fr := range ex.events {
		if fr.Hold {
			if flusher != nil {
				flusher.Flush()
			}
			select {
			case <-req.Context().Done():
				select {
				case r.gone <- struct{}{}:
				default:
				}
			case <-r.done:
			}
			return
		}
		if err := enc.Encode(w, encodeFrame(fr)); err != nil {
			return // the client went away
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// encodeFrame builds the binary event-stream message of a frame: the
// headers Bedrock sends and the JSON payload.
func encodeFrame(fr frame) eventstream.Message {
	var msg eventstream.Message
	if fr.Exception != "" {
		msg.Headers.Set(eventstreamapi.ExceptionTypeHeader, eventstream.StringValue(fr.Exception))
		msg.Headers.Set(eventstreamapi.ContentTypeHeader, eventstream.StringValue("application/json"))
		msg.Headers.Set(eventstreamapi.MessageTypeHeader, eventstream.StringValue(eventstreamapi.ExceptionMessageType))
	} else {
		msg.Headers.Set(eventstreamapi.EventTypeHeader, eventstream.StringValue(fr.Event))
		msg.Headers.Set(eventstreamapi.ContentTypeHeader, eventstream.StringValue("application/json"))
		msg.Headers.Set(eventstreamapi.MessageTypeHeader, eventstream.StringValue(eventstreamapi.EventMessageType))
	}
	msg.Payload = fr.Payload
	return msg
}

// escapeLabel escapes a URI path label as the AWS REST protocols do: every
// byte but the unreserved characters.
func escapeLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// isolateAWS clears the AWS environment so that nothing but the test's
// config is read: no profile, empty shared files, no instance metadata.
func isolateAWS(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"config", "credentials"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
	}
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// testConfig is the config of the recorded exchanges against a server:
// static fake credentials, a fixed region, 2 retries a few ms apart.
func testConfig(baseURL string) bedrock.Config {
	cfg := bedrock.DefaultConfig()
	cfg.Model = testModel
	cfg.Region = testRegion
	cfg.BaseURL = baseURL
	cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIDTESTTESTTEST", "fake-secret", "")
	cfg.RetryBaseDelay = 2 * time.Millisecond
	return cfg
}

// newReplayModel serves scenario and returns a model that talks to it;
// edit adjusts the config.
func newReplayModel(t *testing.T, scenario string, edit ...func(*bedrock.Config)) (*bedrock.Model, *replay) {
	t.Helper()
	isolateAWS(t)
	return newReplayModelKeepingEnv(t, scenario, edit...)
}

// newReplayModelKeepingEnv is newReplayModel in the environment the test
// set up (after isolateAWS).
func newReplayModelKeepingEnv(t *testing.T, scenario string, edit ...func(*bedrock.Config)) (*bedrock.Model, *replay) {
	t.Helper()
	cfg := testConfig("")
	for _, e := range edit {
		e(&cfg)
	}
	r := newReplay(t, scenario, cfg.Model)
	cfg.BaseURL = r.srv.URL
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err)
	return m, r
}

// collect runs one stream to its end and returns its events and its error.
func collect(ctx context.Context, m model.Model, req *model.Request) ([]model.StreamEvent, error) {
	var evs []model.StreamEvent
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}
