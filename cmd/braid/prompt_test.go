package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ctrlCWhileWaiting is a stdin that never answers: a read cancels the
// context (Ctrl-C while the demo waits for the answer), then blocks until
// the test ends.
type ctrlCWhileWaiting struct {
	cancel context.CancelFunc
	r      *io.PipeReader
}

func (s ctrlCWhileWaiting) Read(p []byte) (int, error) {
	s.cancel()
	return s.r.Read(p)
}

// runCtrlCAtPrompt runs the command line and presses Ctrl-C when it reads
// its stdin, and fails the test when it does not return then (a prompt
// that ignores its context blocks forever on the stdin).
func runCtrlCAtPrompt(t *testing.T, args []string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close() }) // ends the read left pending
	var so, se bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, ctrlCWhileWaiting{cancel, r}, &so, &se) }()
	select {
	case code = <-done:
		return code, so.String(), se.String()
	case <-time.After(30 * time.Second):
		t.Fatalf("%v: still waiting for an answer after Ctrl-C", args)
		return 0, "", ""
	}
}

// Ctrl-C at the demo's (y/N) prompt ends the demo at once, exit status
// 130, saying that nothing was deleted and how to answer later; the run
// stays stored, and a later run with -yes resumes it.
func TestDemo_CtrlCAtThePromptStopsAndKeepsTheRun(t *testing.T) {
	ws := t.TempDir()
	code, _, stderr := runCtrlCAtPrompt(t, []string{"demo", "-dir", ws})
	assert.Equal(t, exitInterrupted, code)
	assert.Contains(t, stderr, "braid demo: stopped at the approval (context canceled): nothing was deleted")
	assert.Contains(t, stderr, "braid demo -dir "+ws+" -yes (or -no)")
	assert.Len(t, remaining(t, ws), 5, "nothing deleted")

	var again bytes.Buffer
	require.NoError(t, runDemo(context.Background(), []string{"-yes", "-dir", ws}, strings.NewReader(""), &again))
	assert.Contains(t, again.String(), "resuming the run saved in")
	assert.Contains(t, again.String(), "Done: the old files are deleted.")
	assert.Equal(t, []string{"logs/app-today.log", "notes.txt"}, remaining(t, ws))
}

// Ctrl-C at the graph demo's (y/N) prompt ends it at once, exit status
// 130, before the cleanup node runs.
func TestDemoGraph_CtrlCAtThePromptStops(t *testing.T) {
	code, stdout, stderr := runCtrlCAtPrompt(t, []string{"demo", "graph"})
	assert.Equal(t, exitInterrupted, code)
	assert.Contains(t, stderr, "braid demo: stopped at the approval (context canceled): nothing was cleaned up")
	assert.NotContains(t, stdout, "delete_resources")
}

// A prompt's ask returns its context's cause when the context ends before
// a line comes (while it waits, or before it asks); the line read
// meanwhile is the next ask's answer.
func TestPrompter_AskEndsWithItsContextAndKeepsTheLateLine(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	p := newPrompter(ctrlCWhileWaiting{cancel, r}, &out, false, false)
	_, err := p.ask(ctx, "first? ")
	require.ErrorIs(t, err, context.Canceled)
	_, err = p.ask(ctx, "again? ")
	require.ErrorIs(t, err, context.Canceled)

	go func() { _, _ = io.WriteString(w, "Y \n") }()
	answer, err := p.ask(context.Background(), "second? ")
	require.NoError(t, err)
	assert.Equal(t, "Y", answer)
	assert.Equal(t, "first? \nagain? \nsecond? ", out.String())
}
