package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

type deleteIn struct {
	Paths []string `json:"paths" jsonschema:"files to delete"`
	Force bool     `json:"force,omitempty" jsonschema:"delete even read-only files"`
}

func newDelete(got *deleteIn) *tool.FuncTool[deleteIn, string] {
	return tool.New("delete_files", "Delete files at the given paths", func(ctx context.Context, tc *tool.Context, in deleteIn) (string, error) {
		*got = in
		return fmt.Sprintf("deleted %d", len(in.Paths)), nil
	})
}

// SPEC A13 (tool building): New derives the input schema from the struct,
// with descriptions from the jsonschema tags.
func TestNew_DerivesSchemaFromInputStruct(t *testing.T) {
	var got deleteIn
	d := newDelete(&got)
	require.NoError(t, d.Validate())
	spec := d.Spec()
	assert.Equal(t, "delete_files", spec.Name)
	assert.Equal(t, "Delete files at the given paths", spec.Description)

	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Items       *struct {
				Type any `json:"type"`
			} `json:"items"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	require.NoError(t, json.Unmarshal(spec.InputSchema, &schema), string(spec.InputSchema))
	assert.Equal(t, "object", schema.Type)
	paths, ok := schema.Properties["paths"]
	require.True(t, ok, "property paths: %s", spec.InputSchema)
	assert.Contains(t, bhTypes(paths.Type), "array")
	require.NotNil(t, paths.Items, "paths has an items schema")
	assert.Equal(t, []string{"string"}, bhTypes(paths.Items.Type))
	assert.Equal(t, "files to delete", paths.Description)
	force, ok := schema.Properties["force"]
	require.True(t, ok)
	assert.Equal(t, []string{"boolean"}, bhTypes(force.Type))
	assert.Equal(t, "delete even read-only files", force.Description)
	assert.Contains(t, schema.Required, "paths")
	assert.NotContains(t, schema.Required, "force", "omitempty fields are optional")
	require.NoError(t, tool.ValidateSpec(spec))
}

// bhTypes normalises a JSON schema "type" (a string or a list) to a list.
func bhTypes(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// SPEC A13: a bad name or an input type without a schema is reported by Validate.
func TestNew_ValidateReportsBuildProblems(t *testing.T) {
	noop := func(ctx context.Context, tc *tool.Context, in deleteIn) (string, error) { return "", nil }
	assert.ErrorIs(t, tool.New("has space", "", noop).Validate(), tool.ErrBadName)
	assert.ErrorIs(t, tool.New("", "", noop).Validate(), tool.ErrBadName)
	long := make([]byte, 65)
	for i := range long {
		long[i] = 'a'
	}
	assert.ErrorIs(t, tool.New(string(long), "", noop).Validate(), tool.ErrBadName)
	assert.NoError(t, tool.New(string(long[:64]), "", noop).Validate())

	type chanIn struct {
		C chan int `json:"c"`
	}
	bad := tool.New("chan_tool", "", func(ctx context.Context, tc *tool.Context, in chanIn) (string, error) { return "", nil })
	require.Error(t, bad.Validate())
	_, err := bad.Run(context.Background(), nil, json.RawMessage(`{}`))
	assert.Error(t, err, "a tool that failed to build does not run")

	var nilFn tool.Func[deleteIn, string]
	assert.Error(t, tool.New("nil_fn", "", nilFn).Validate())
}

// SPEC A13: Run decodes the input into the struct; bad input is ErrBadInput.
func TestRun_DecodesInputAndRejectsBadInput(t *testing.T) {
	var got deleteIn
	d := newDelete(&got)
	out, err := d.Run(context.Background(), nil, json.RawMessage(`{"paths":["a/b","c"],"force":true}`))
	require.NoError(t, err)
	assert.Equal(t, deleteIn{Paths: []string{"a/b", "c"}, Force: true}, got)
	require.Len(t, out, 1)
	require.NotNil(t, out[0].Text)
	assert.Equal(t, "deleted 2", *out[0].Text)

	for _, bad := range []string{`{"paths":3}`, `{"paths":["a"]`, `"just a string"`, `[1]`} {
		_, err := d.Run(context.Background(), nil, json.RawMessage(bad))
		assert.ErrorIs(t, err, tool.ErrBadInput, bad)
	}

	got = deleteIn{Paths: []string{"stale"}}
	_, err = d.Run(context.Background(), nil, nil)
	require.NoError(t, err, "empty input is the zero value")
	assert.Empty(t, got.Paths)
}

// SPEC A13: the function's error is returned as it is.
func TestRun_ReturnsFunctionError(t *testing.T) {
	boom := errors.New("boom")
	f := tool.New("f", "", func(ctx context.Context, tc *tool.Context, in struct{}) (int, error) { return 0, boom })
	_, err := f.Run(context.Background(), nil, json.RawMessage(`{}`))
	assert.ErrorIs(t, err, boom)
}

// SPEC A13: Content turns values into text or JSON blocks.
func TestContent_Shapes(t *testing.T) {
	type point struct {
		X int    `json:"x"`
		L string `json:"l"`
	}
	cases := []struct {
		name     string
		in       any
		wantText string
		wantJSON string
	}{
		{"string", "hello <b>", "hello <b>", ""},
		{"empty string", "", "", ""},
		{"struct", point{X: 1, L: "a"}, "", `{"x":1,"l":"a"}`},
		{"pointer to struct", &point{X: 2}, "", `{"x":2,"l":""}`},
		{"map", map[string]any{"ok": true}, "", `{"ok":true}`},
		{"int", 42, "42", ""},
		{"float", 1.5, "1.5", ""},
		{"bool", true, "true", ""},
		{"slice", []string{"a", "b"}, `["a","b"]`, ""},
		{"nil", nil, "null", ""},
		{"nil pointer", (*point)(nil), "null", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := tool.Content(c.in)
			require.NoError(t, err)
			require.Len(t, out, 1)
			if c.wantJSON != "" {
				assert.Nil(t, out[0].Text)
				assert.JSONEq(t, c.wantJSON, string(out[0].JSON))
				return
			}
			assert.Nil(t, out[0].JSON)
			require.NotNil(t, out[0].Text)
			assert.Equal(t, c.wantText, *out[0].Text)
		})
	}

	s := "given"
	blocks := []model.ToolResultContent{{Text: &s}, {JSON: json.RawMessage(`{"a":1}`)}}
	out, err := tool.Content(blocks)
	require.NoError(t, err)
	assert.Equal(t, blocks, out, "result content is passed through")

	_, err = tool.Content(make(chan int))
	assert.Error(t, err, "a value that is not JSON is an error")
}

// SPEC A13: a tool built with New returns struct output as a JSON block.
func TestRun_StructOutputIsJSONBlock(t *testing.T) {
	type report struct {
		Deleted []string `json:"deleted"`
	}
	r := tool.New("report", "", func(ctx context.Context, tc *tool.Context, in deleteIn) (report, error) {
		return report{Deleted: in.Paths}, nil
	})
	out, err := r.Run(context.Background(), nil, json.RawMessage(`{"paths":["x"]}`))
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.JSONEq(t, `{"deleted":["x"]}`, string(out[0].JSON))
}

// SPEC A13: Invoke turns a panic into a *tool.PanicError.
func TestInvoke_PanicBecomesPanicError(t *testing.T) {
	p := tool.New("panicky", "", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		panic("kaboom")
	})
	out, err := tool.Invoke(context.Background(), p, nil, json.RawMessage(`{}`))
	require.Error(t, err)
	assert.Nil(t, out)
	var pe *tool.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "panicky", pe.Tool)
	assert.Equal(t, "kaboom", pe.Value)
	assert.Contains(t, err.Error(), "panicked")

	ok := tool.New("fine", "", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) { return "ok", nil })
	out, err = tool.Invoke(context.Background(), ok, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", *out[0].Text)
}

// SPEC I3, I2: a tool context raises into the owner's state with the
// tool_call id; without a scope (direct calls) it cannot interrupt.
func TestContext_InterruptIDsAndDirectCalls(t *testing.T) {
	st := interrupt.NewState()
	tu := model.ToolUse{ToolUseID: "t1", Name: "x"}
	tc := tool.NewContext(tu, tool.ScopeFor(st, "t1"), nil, nil)
	_, err := tc.Interrupt("test_name", "why")
	require.ErrorIs(t, err, interrupt.ErrInterrupted)
	assert.True(t, tc.Interrupted())
	in, ok := st.Get("v1:tool_call:t1:78714d6c-613c-5cf4-bf25-7037569941f9")
	require.True(t, ok)
	assert.Equal(t, interrupt.SourceTool, in.Source)

	direct := tool.NewContext(tu, nil, nil, nil)
	_, err = direct.Interrupt("q", nil)
	assert.ErrorIs(t, err, interrupt.ErrNotInterruptible)
	assert.False(t, direct.Interrupted())
	assert.Nil(t, direct.Scope())
}

// ---------------------------------------------------------------------------
// Executors (SPEC A6)

// bhLog records executor calls in order.
type bhLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *bhLog) add(s string) {
	l.mu.Lock()
	l.ops = append(l.ops, s)
	l.mu.Unlock()
}

func (l *bhLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops)
}

// fakeTask is a Task whose answers are fixed and whose Run may block on body.
// Run calls onDone, if set, as its last step before returning.
type fakeTask struct {
	name          string
	key           string
	log           *bhLog
	run           bool
	prepInterrupt bool
	runInterrupt  bool
	body          func()
	onDone        func()
	mu            sync.Mutex
	finished      bool
}

func (f *fakeTask) Prepare(ctx context.Context) (bool, bool) {
	f.log.add("prepare " + f.name)
	return f.run, f.prepInterrupt
}

func (f *fakeTask) Run(ctx context.Context) bool {
	f.log.add("run " + f.name)
	if f.body != nil {
		f.body()
	}
	f.mu.Lock()
	f.finished = true
	f.mu.Unlock()
	if f.onDone != nil {
		f.onDone()
	}
	return f.runInterrupt
}

func (f *fakeTask) ExclusiveKey() string { return f.key }

func (f *fakeTask) done() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.finished
}

// startExecute runs ex.Execute on the tasks in a goroutine; the channel is
// closed when it returns.
func startExecute(ex tool.Executor, tasks ...*fakeTask) <-chan struct{} {
	ts := make([]tool.Task, len(tasks))
	for i, x := range tasks {
		ts[i] = x
	}
	done := make(chan struct{})
	go func() {
		ex.Execute(context.Background(), ts)
		close(done)
	}()
	return done
}

// waitReturned waits for a startExecute channel. The time limit only turns a
// deadlock into a failure; no outcome depends on it.
func waitReturned(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "Execute did not return")
	}
}

func bhExecute(t *testing.T, ex tool.Executor, tasks ...*fakeTask) {
	t.Helper()
	waitReturned(t, startExecute(ex, tasks...))
}

// SPEC A6: Concurrent prepares every task in order before running any, and
// runs only the runnable ones.
func TestConcurrent_PreparesAllInOrderBeforeRunning(t *testing.T) {
	log := &bhLog{}
	release := make(chan struct{})
	var running sync.WaitGroup
	running.Add(2)
	body := func() { running.Done(); <-release }
	a := &fakeTask{name: "a", log: log, run: true, body: body}
	b := &fakeTask{name: "b", log: log, run: false}                      // cancelled
	c := &fakeTask{name: "c", log: log, run: false, prepInterrupt: true} // interrupted
	d := &fakeTask{name: "d", log: log, run: true, body: body}
	returned := startExecute(tool.Concurrent{}, a, b, c, d)
	running.Wait() // both runs are under way and held
	select {
	case <-returned:
		require.FailNow(t, "Execute returned while runs were under way")
	default:
	}
	close(release)
	waitReturned(t, returned)
	ops := log.list()
	require.Len(t, ops, 6)
	assert.Equal(t, []string{"prepare a", "prepare b", "prepare c", "prepare d"}, ops[:4])
	assert.ElementsMatch(t, []string{"run a", "run d"}, ops[4:])
	assert.True(t, a.done() && d.done(), "Execute waits for every run")
	assert.False(t, b.done() || c.done())
}

// SPEC A6: Concurrent runs the runnable tasks at the same time: two tasks
// that wait for each other both finish.
func TestConcurrent_RunsTasksConcurrently(t *testing.T) {
	log := &bhLog{}
	aStarted, bStarted := make(chan struct{}), make(chan struct{})
	var timedOut sync.Map
	wait := func(name string, mine chan struct{}, other chan struct{}) func() {
		return func() {
			close(mine)
			select {
			case <-other:
			case <-time.After(5 * time.Second):
				timedOut.Store(name, true)
			}
		}
	}
	a := &fakeTask{name: "a", log: log, run: true, body: wait("a", aStarted, bStarted)}
	b := &fakeTask{name: "b", log: log, run: true, body: wait("b", bStarted, aStarted)}
	bhExecute(t, tool.Concurrent{}, a, b)
	_, aTimed := timedOut.Load("a")
	_, bTimed := timedOut.Load("b")
	assert.False(t, aTimed || bTimed, "the tasks did not run concurrently")
	assert.True(t, a.done() && b.done())
}

// SPEC A6: with the concurrent executor, an interrupted task does not stop
// the others; all of them run to completion before Execute returns.
func TestConcurrent_InterruptedRunDoesNotStopOthers(t *testing.T) {
	log := &bhLog{}
	aInterrupted := make(chan struct{})
	a := &fakeTask{name: "a", log: log, run: true, runInterrupt: true, onDone: func() { close(aInterrupted) }}
	// b is still running when a is interrupted, and finishes only after.
	b := &fakeTask{name: "b", log: log, run: true, body: func() { <-aInterrupted }}
	c := &fakeTask{name: "c", log: log, run: true}
	bhExecute(t, tool.Concurrent{}, a, b, c)
	assert.True(t, a.done() && b.done() && c.done())
	assert.Len(t, log.list(), 6)
}

// SPEC A6: a single runnable task runs too (and Execute with none returns).
func TestConcurrent_SingleAndEmpty(t *testing.T) {
	log := &bhLog{}
	a := &fakeTask{name: "a", log: log, run: true}
	bhExecute(t, tool.Concurrent{}, a)
	assert.Equal(t, []string{"prepare a", "run a"}, log.list())
	bhExecute(t, tool.Concurrent{})
}

// SPEC A6: Sequential stops at the first interrupted prepare.
func TestSequential_StopsAtInterruptedPrepare(t *testing.T) {
	log := &bhLog{}
	a := &fakeTask{name: "a", log: log, run: true}
	b := &fakeTask{name: "b", log: log, prepInterrupt: true}
	c := &fakeTask{name: "c", log: log, run: true}
	bhExecute(t, tool.Sequential{}, a, b, c)
	assert.Equal(t, []string{"prepare a", "run a", "prepare b"}, log.list())
}

// SPEC A6: Sequential stops at the first interrupted run.
func TestSequential_StopsAtInterruptedRun(t *testing.T) {
	log := &bhLog{}
	a := &fakeTask{name: "a", log: log, run: true, runInterrupt: true}
	b := &fakeTask{name: "b", log: log, run: true}
	bhExecute(t, tool.Sequential{}, a, b)
	assert.Equal(t, []string{"prepare a", "run a"}, log.list())
}

// SPEC A6, A8: Sequential skips a task that may not run (cancelled) and goes
// on, one task at a time.
func TestSequential_SkipsCancelledAndRunsInOrder(t *testing.T) {
	log := &bhLog{}
	a := &fakeTask{name: "a", log: log, run: false}
	b := &fakeTask{name: "b", log: log, run: true}
	c := &fakeTask{name: "c", log: log, run: true}
	bhExecute(t, tool.Sequential{}, a, b, c)
	assert.Equal(t, []string{"prepare a", "prepare b", "run b", "prepare c", "run c"}, log.list())
}

// SPEC A6 (exclusive tools, tool.Exclusive): Concurrent runs the tasks of
// one exclusive key one after another, in order, while a task without a key
// runs at the same time as them.
func TestConcurrent_RunsTasksOfOneExclusiveKeyOneAtATimeBesideTheOthers(t *testing.T) {
	log := &bhLog{}
	aStarted, cStarted := make(chan struct{}), make(chan struct{})
	var aTimedOut, bOverlapped, cTimedOut bool
	a := &fakeTask{name: "a", key: "k", log: log, run: true}
	a.body = func() {
		close(aStarted)
		select {
		case <-cStarted:
		case <-time.After(5 * time.Second):
			aTimedOut = true
		}
	}
	b := &fakeTask{name: "b", key: "k", log: log, run: true, body: func() { bOverlapped = !a.done() }}
	c := &fakeTask{name: "c", log: log, run: true, body: func() {
		close(cStarted)
		select {
		case <-aStarted:
		case <-time.After(5 * time.Second):
			cTimedOut = true
		}
	}}
	bhExecute(t, tool.Concurrent{}, a, b, c)
	assert.False(t, aTimedOut || cTimedOut, "a task without a key runs beside the exclusive ones")
	assert.False(t, bOverlapped, "b starts only once a, of its key, has finished")
	assert.True(t, a.done() && b.done() && c.done())
	ops := log.list()
	assert.Less(t, slices.Index(ops, "run a"), slices.Index(ops, "run b"), "in tool-use order")
}

// SPEC A6, A7 (exclusive tools): once a task of an exclusive key is
// interrupted, in its run or in its prepare, the later tasks of that key do
// not run in this pass; tasks of other keys, or of none, do.
func TestConcurrent_AnInterruptedExclusiveTaskHoldsBackTheLaterTasksOfItsKey(t *testing.T) {
	for _, where := range []string{"run", "prepare"} {
		t.Run(where, func(t *testing.T) {
			log := &bhLog{}
			a := &fakeTask{name: "a", key: "k", log: log, run: where == "run", runInterrupt: where == "run", prepInterrupt: where == "prepare"}
			b := &fakeTask{name: "b", key: "k", log: log, run: true}
			c := &fakeTask{name: "c", key: "other", log: log, run: true}
			d := &fakeTask{name: "d", log: log, run: true}
			e := &fakeTask{name: "e", key: "k", log: log, run: true}
			bhExecute(t, tool.Concurrent{}, a, b, c, d, e)
			ops := log.list()
			assert.Equal(t, []string{"prepare a", "prepare b", "prepare c", "prepare d", "prepare e"}, ops[:5], "every task is prepared, in order")
			assert.NotContains(t, ops, "run b")
			assert.NotContains(t, ops, "run e")
			assert.True(t, c.done() && d.done())
			assert.Equal(t, where == "run", slices.Contains(ops, "run a"))
		})
	}
}

// SPEC A13: input the tool's own schema refuses (a required parameter
// missing, a parameter the schema does not name, a name in another case,
// null or a non-object for a struct, a wrong type) is an error wrapping
// ErrBadInput and the function does not run: decoding accepts exactly
// what the schema given to the model says.
func TestRun_RefusesInputItsSchemaRefuses(t *testing.T) {
	type nested struct {
		N int `json:"n"`
	}
	type embedded struct {
		E string `json:"e"`
	}
	type in struct {
		embedded
		Name    string            `json:"name"`
		Count   int               `json:"count,omitempty"`
		Ptr     *int              `json:"ptr,omitempty"`
		Tags    map[string]string `json:"tags,omitempty"`
		Inner   *nested           `json:"inner,omitempty"`
		Any     json.RawMessage   `json:"any,omitempty"`
		Ignored string            `json:"-"`
		//lint:ignore U1000 an unexported field the schema must leave out
		hidden int
	}
	calls := 0
	tl := tool.New("typed", "", func(ctx context.Context, tc *tool.Context, v in) (string, error) {
		calls++
		return v.Name + v.E, nil
	})
	require.NoError(t, tl.Validate())
	for _, bad := range []string{
		`{"e":"x"}`,                           // name missing
		`{"name":"a"}`,                        // embedded e missing
		`{"name":"a","e":"x","extra":1}`,      // a parameter the schema does not name
		`{"NAME":"a","e":"x"}`,                // another case than the schema's
		`{"name":"a","e":"x","Ignored":"y"}`,  // a field the schema leaves out
		`{"name":"a","e":"x","hidden":1}`,     // an unexported field
		`{"name":"a","e":"x","inner":{}}`,     // nested required n missing
		`{"name":"a","e":"x","tags":{"k":1}}`, // a map value of the wrong type
		`null`,
		`[]`,
	} {
		_, err := tl.Run(context.Background(), nil, json.RawMessage(bad))
		assert.ErrorIs(t, err, tool.ErrBadInput, bad)
	}
	assert.Zero(t, calls, "the function never ran on refused input")

	for _, good := range []string{
		`{"name":"a","e":"x"}`,
		`{"name":"a","e":"x","count":2,"ptr":null,"tags":{"k":"v"},"inner":{"n":1}}`,
		`{"name":"a","e":"x","any":{"free":["form",1]}}`,
	} {
		out, err := tl.Run(context.Background(), nil, json.RawMessage(good))
		require.NoError(t, err, good)
		assert.Equal(t, "ax", *out[0].Text)
	}
	assert.Equal(t, 3, calls)
}

// SPEC A13 (tool building): a model's tool takes a JSON object, so an input
// type whose schema describes no object (a string, a number, a slice) is
// reported by Validate when the agent is built, not by the model's API at
// the first call.
func TestNew_ValidateRefusesAnInputTypeThatIsNotAnObject(t *testing.T) {
	assert.ErrorIs(t, tool.New("s", "", func(context.Context, *tool.Context, string) (string, error) { return "", nil }).Validate(), tool.ErrInputNotObject)
	assert.ErrorIs(t, tool.New("n", "", func(context.Context, *tool.Context, int) (string, error) { return "", nil }).Validate(), tool.ErrInputNotObject)
	assert.ErrorIs(t, tool.New("l", "", func(context.Context, *tool.Context, []string) (string, error) { return "", nil }).Validate(), tool.ErrInputNotObject)
	assert.NoError(t, tool.New("m", "", func(context.Context, *tool.Context, map[string]any) (string, error) { return "", nil }).Validate())
	assert.NoError(t, tool.New("p", "", func(context.Context, *tool.Context, *deleteIn) (string, error) { return "", nil }).Validate())
	assert.NoError(t, tool.New("e", "", func(context.Context, *tool.Context, struct{}) (string, error) { return "", nil }).Validate())
}

// SPEC A13 (tool building): the schema a tool gives the model has "type":
// "object" at the top, as every provider requires of a tool's input
// schema, also for a pointer input type (whose Go schema also allows
// null); the tool itself still takes null for it.
func TestNew_SchemaForTheModelIsAnObjectAtTheTop(t *testing.T) {
	var got *deleteIn
	p := tool.New("p", "", func(ctx context.Context, tc *tool.Context, in *deleteIn) (string, error) {
		got = in
		return "ok", nil
	})
	require.NoError(t, p.Validate())
	var schema map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(p.Spec().InputSchema, &schema))
	assert.JSONEq(t, `"object"`, string(schema["type"]))
	assert.Contains(t, schema, "properties")

	_, err := p.Run(context.Background(), nil, json.RawMessage(`null`))
	require.NoError(t, err)
	assert.Nil(t, got)
	_, err = p.Run(context.Background(), nil, json.RawMessage(`{"paths":["a"]}`))
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, []string{"a"}, got.Paths)
}

// SPEC A13 (tool building): a tool's input schema is a JSON object, which
// every provider requires; JSON null, an array, a string or nothing at all
// is refused when the tool is checked (and so by agent.New), not sent to
// a model.
func TestValidateSpec_RefusesAnInputSchemaThatIsNotAnObject(t *testing.T) {
	for _, schema := range []string{"null", " null ", "[]", `"object"`, ""} {
		spec := model.ToolSpec{Name: "raw", InputSchema: json.RawMessage(schema)}
		assert.Error(t, tool.ValidateSpec(spec), "schema %q", schema)
		raw := &tool.Raw{ToolSpec: spec, Fn: func(ctx context.Context, tc *tool.Context, in json.RawMessage) ([]model.ToolResultContent, error) {
			return nil, nil
		}}
		assert.Error(t, raw.Validate(), "schema %q", schema)
	}
	assert.NoError(t, tool.ValidateSpec(model.ToolSpec{Name: "raw", InputSchema: json.RawMessage(`{"type":"object"}`)}))
}

// SPEC A13 (tool building): a tool's input schema that is an object but
// describes something other than an object ("type" other than "object")
// is refused when the tool is checked, as a provider would refuse it at
// every model call; a schema without "type" describes an object and is
// taken.
func TestValidateSpec_RefusesASchemaWhoseTypeIsNotObject(t *testing.T) {
	for _, schema := range []string{`{"type":"array"}`, `{"type":"string"}`, `{"type":null}`, `{"type":["object","null"]}`, `{"type":1}`} {
		err := tool.ValidateSpec(model.ToolSpec{Name: "raw", InputSchema: json.RawMessage(schema)})
		require.Error(t, err, "schema %s", schema)
		assert.Contains(t, err.Error(), `"type":"object"`, "the message says what to give")
	}
	for _, schema := range []string{`{}`, `{"type":"object","properties":{"a":{"type":"string"}}}`} {
		assert.NoError(t, tool.ValidateSpec(model.ToolSpec{Name: "raw", InputSchema: json.RawMessage(schema)}), "schema %s", schema)
	}
}

// SPEC A13 (tool building): a tool's input schema whose "required" is not
// a list of names, or whose "properties" is not an object, is refused
// when the tool is checked, as the Anthropic provider refuses it at every
// model call and the APIs refuse it; the message says what to give.
func TestValidateSpec_RefusesRequiredOrPropertiesOfTheWrongShape(t *testing.T) {
	for _, schema := range []string{`{"type":"object","required":"a"}`, `{"type":"object","required":[1]}`,
		`{"required":{"a":true}}`, `{"type":"object","properties":["a"]}`, `{"properties":"a"}`, `{"properties":null}`} {
		err := tool.ValidateSpec(model.ToolSpec{Name: "raw", InputSchema: json.RawMessage(schema)})
		require.Error(t, err, "schema %s", schema)
		assert.Contains(t, err.Error(), "give", "schema %s: the message says what to give", schema)
	}
	for _, schema := range []string{`{"type":"object","properties":{},"required":[]}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`} {
		assert.NoError(t, tool.ValidateSpec(model.ToolSpec{Name: "raw", InputSchema: json.RawMessage(schema)}), "schema %s", schema)
	}
}
