package persistence_test

// Golden sessions of schema version 1 (SPEC S1, S5): session exports
// (export.Read, indented) written by a real agent over a memory store,
// committed as testdata/golden/v1/<session id>.json, so a later build that
// cannot read them, or reads them differently, fails here. The tests only
// read testdata: each imports a golden file into a fresh memory store and
// works there. Regenerate with
//
//	go test ./persistence -run TestGolden_Update -update
//
// (timestamps change, nothing else should).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden sessions under testdata/golden")

// goldenDir holds the golden sessions of schema version 1, one
// <session id>.json export each.
const goldenDir = "testdata/golden/v1"

// The golden sessions.
const (
	// goldenHook: the seed's trust pattern. "move a.txt" asked approval for
	// move_files (t1), answered "t" (trust); then "tidy a.txt" ran move_files
	// (t2, trusted, finished) and stopped at the approval hook of
	// delete_files (t3). State: trust = ["move_files"].
	goldenHook = "golden-hook"
	// goldenTool: "deploy" ran inspect_files (t4, finished; it sets the state
	// key "inspected") and deploy (t5), which interrupted from inside the
	// tool (tc.Interrupt).
	goldenTool = "golden-tool"
	// goldenFinished: goldenHook resumed with "t" to end_turn. State: trust =
	// ["move_files", "delete_files"].
	goldenFinished = "golden-finished"
)

var goldenSessions = []string{goldenHook, goldenTool, goldenFinished}

type goldenPaths struct {
	Paths []string `json:"paths"`
}

type goldenTarget struct {
	Target string `json:"target"`
}

// goldenRuns counts tool runs by tool use id, across concurrent tools.
type goldenRuns struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *goldenRuns) inc(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[id]++
}

func (r *goldenRuns) all() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// goldenAgent builds the agent the golden sessions were written with. The
// model is a function of the conversation, so a resumed agent answers as
// the one that wrote the session would have.
func goldenAgent(t *testing.T, sess agent.Session, runs *goldenRuns) *agent.Agent {
	t.Helper()
	a, err := newGoldenAgent(sess, runs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

// newGoldenAgent is goldenAgent for tests that expect agent.New to fail; the
// caller closes the agent it gets.
func newGoldenAgent(sess agent.Session, runs *goldenRuns) (*agent.Agent, error) {
	pathsTool := func(name, verb string) tool.Tool {
		return tool.New(name, verb+" files", func(ctx context.Context, tc *tool.Context, in goldenPaths) (string, error) {
			runs.inc(tc.ToolUse.ToolUseID)
			if name == "inspect_files" {
				if err := tc.State.Set("inspected", in.Paths); err != nil {
					return "", err
				}
			}
			return verb + " " + strings.Join(in.Paths, " "), nil
		})
	}
	deploy := tool.New("deploy", "deploy the app", func(ctx context.Context, tc *tool.Context, in goldenTarget) (string, error) {
		runs.inc(tc.ToolUse.ToolUseID)
		ans, err := tc.Interrupt("confirm-deploy", map[string]any{"target": in.Target})
		if err != nil {
			return "", err
		}
		if s, _ := ans.String(); s != "yes" {
			return "deploy refused", nil
		}
		return "deployed to " + in.Target, nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			var parts []string
			for _, r := range rs {
				parts = append(parts, r.Text())
			}
			return model.TextTurn("done: " + strings.Join(parts, ", ")), nil
		}
		a := goldenPaths{Paths: []string{"a.txt"}}
		switch last.Text() {
		case "move a.txt":
			return model.ToolTurn(model.Call("t1", "move_files", a)), nil
		case "tidy a.txt":
			return model.ToolTurn(model.Call("t2", "move_files", a), model.Call("t3", "delete_files", a)), nil
		case "deploy":
			return model.ToolTurn(model.Call("t4", "inspect_files", goldenPaths{Paths: []string{"app"}}),
				model.Call("t5", "deploy", goldenTarget{Target: "prod"})), nil
		}
		return model.Turn{}, fmt.Errorf("golden model: unexpected prompt %q", last.Text())
	})
	// approval gates move_files and delete_files unless trusted (the seed's
	// "t" answer, kept in the state under "trust").
	approval := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		name := ev.ToolUse.Name
		if name != "move_files" && name != "delete_files" {
			return nil
		}
		var trust []string
		if _, err := ev.Agent.State().GetInto("trust", &trust); err != nil {
			return err
		}
		if slices.Contains(trust, name) {
			return nil
		}
		var in goldenPaths
		if err := ev.ToolUse.DecodeInput(&in); err != nil {
			return err
		}
		ans, err := ev.Interrupt("approval", map[string]any{"tool": name, "paths": in.Paths})
		if err != nil {
			return err
		}
		switch s, _ := ans.String(); s {
		case "t":
			return ev.Agent.State().Set("trust", append(trust, name))
		case "y":
			return nil
		default:
			ev.CancelTool("denied")
			return nil
		}
	})
	return agent.New(context.Background(), agent.Config{
		Model: m,
		Tools: []tool.Tool{pathsTool("move_files", "moved"), pathsTool("delete_files", "deleted"),
			pathsTool("inspect_files", "inspected"), deploy},
		Hooks:   []hook.Provider{approval},
		Session: sess,
	})
}

// goldenFile returns the path of a golden session's export.
func goldenFile(sessionID string) string { return filepath.Join(goldenDir, sessionID+".json") }

// goldenExport reads a golden session's export strictly: no unknown field.
func goldenExport(t *testing.T, sessionID string) *export.Session {
	t.Helper()
	b, err := os.ReadFile(goldenFile(sessionID))
	require.NoError(t, err)
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var exp export.Session
	require.NoError(t, d.Decode(&exp), goldenFile(sessionID))
	require.Equal(t, sessionID, exp.SessionID, "%s: the file is named after its session", goldenFile(sessionID))
	require.NotEmpty(t, exp.Records)
	return &exp
}

// goldenStore imports a golden session into a fresh memory store.
func goldenStore(t *testing.T, sessionID string) *memory.Store {
	t.Helper()
	st := memory.New()
	require.NoError(t, export.Write(context.Background(), st, goldenExport(t, sessionID)))
	return st
}

// goldenManager returns a new session manager on sessionID in st: what a
// fresh process (or request) builds over the store it opened once.
func goldenManager(t *testing.T, st persistence.Store, sessionID string) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(st, sessionID)
	require.NoError(t, err)
	return m
}

// exportOf returns the session as export.Read reads it (nil when the
// session has no record): versions and timestamps included.
func exportOf(t *testing.T, st persistence.Store, sessionID string) *export.Session {
	t.Helper()
	exp, err := exportErr(st, sessionID)
	require.NoError(t, err)
	return exp
}

// exportErr is exportOf for goroutines other than the test's (hooks,
// tools), which must not call t.FailNow.
func exportErr(st persistence.Store, sessionID string) (*export.Session, error) {
	exp, err := export.Read(context.Background(), st, sessionID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	return exp, err
}

// agentKey is the key of the default agent's record in a session.
func agentKey(sessionID string) persistence.Key {
	return persistence.Key{SessionID: sessionID, Kind: persistence.KindAgent, ID: agent.DefaultID}
}

// invokeOK runs one invocation that must succeed with the given stop reason.
func invokeOK(t *testing.T, a *agent.Agent, in agent.Input, want agent.StopReason) *agent.Result {
	t.Helper()
	res, err := a.Invoke(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, want, res.StopReason, "result: %v", res)
	return res
}

// goldenWrite runs the scenarios against a memory store and writes their
// exports over the golden files (and removes anything else in goldenDir).
func goldenWrite(t *testing.T) {
	t.Helper()
	st := memory.New()
	interruptID := func(res *agent.Result) string {
		t.Helper()
		require.Len(t, res.Interrupts, 1)
		return res.Interrupts[0].ID
	}
	hookRun := func(sessionID string, finish bool) {
		a := goldenAgent(t, goldenManager(t, st, sessionID), &goldenRuns{})
		res := invokeOK(t, a, agent.Text("move a.txt"), agent.StopInterrupt)
		invokeOK(t, a, agent.Resume(interrupt.Respond(interruptID(res), "t")), agent.StopEndTurn)
		res = invokeOK(t, a, agent.Text("tidy a.txt"), agent.StopInterrupt)
		if finish {
			invokeOK(t, a, agent.Resume(interrupt.Respond(interruptID(res), "t")), agent.StopEndTurn)
		}
	}
	hookRun(goldenHook, false)
	hookRun(goldenFinished, true)
	a := goldenAgent(t, goldenManager(t, st, goldenTool), &goldenRuns{})
	invokeOK(t, a, agent.Text("deploy"), agent.StopInterrupt)

	require.NoError(t, os.RemoveAll(goldenDir))
	require.NoError(t, os.MkdirAll(goldenDir, 0o755))
	for _, id := range goldenSessions {
		b, err := json.MarshalIndent(exportOf(t, st, id), "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(goldenFile(id), append(b, '\n'), 0o644))
	}
}

// requireGoodHistory checks SPEC A3 on a final history: roles alternate,
// starting with the user, and every tool-use message is followed by a
// message with exactly one result per tool use, in the same order.
func requireGoodHistory(t *testing.T, msgs []model.Message) {
	t.Helper()
	require.NotEmpty(t, msgs)
	require.Equal(t, model.RoleUser, msgs[0].Role)
	for i, m := range msgs {
		if i > 0 {
			require.NotEqual(t, msgs[i-1].Role, m.Role, "roles alternate at message %d", i)
		}
		uses := m.ToolUses()
		if len(uses) == 0 {
			continue
		}
		require.Less(t, i+1, len(msgs), "tool uses at the end of the history")
		rs := msgs[i+1].ToolResults()
		require.Len(t, rs, len(uses), "one result per tool use (message %d)", i)
		for k := range uses {
			require.Equal(t, uses[k].ToolUseID, rs[k].ToolUseID, "result order (message %d)", i+1)
		}
	}
}

func toolUseIDs(m model.Message) []string {
	var out []string
	for _, u := range m.ToolUses() {
		out = append(out, u.ToolUseID)
	}
	return out
}

func toolResultTexts(m model.Message) []string {
	var out []string
	for _, r := range m.ToolResults() {
		out = append(out, r.ToolUseID+"="+r.Text())
	}
	return out
}

func texts(msgs []model.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role)+":"+m.Text())
	}
	return out
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SPEC S5 (golden files): with -update, rewrites the golden sessions from a
// real agent run; without it, does nothing (the tests below only read them).
func TestGolden_Update(t *testing.T) {
	if !*updateGolden {
		t.Skip("run with -update to rewrite the golden sessions")
	}
	goldenWrite(t)
}

// SPEC S1, S5 (golden, schema 1), I2, A3, A7, A11: a session of schema
// version 1 stopped at a BeforeToolCallEvent hook, with the trust key in the
// agent state and a sibling tool already finished, loads in this build and
// resumes in a fresh agent: only the gated tool runs, the history is valid,
// the state is kept.
func TestGolden_HookInterruptResumes(t *testing.T) {
	ctx := context.Background()
	st := goldenStore(t, goldenHook)
	before := exportOf(t, st, goldenHook)

	_, rec, err := goldenManager(t, st, goldenHook).OpenAgent(ctx, agent.DefaultID)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, []string{"user:move a.txt", "assistant:", "user:", "assistant:done: moved a.txt", "user:tidy a.txt"}, texts(rec.Messages))
	assert.JSONEq(t, `["move_files"]`, string(rec.State["trust"]))
	require.True(t, rec.Interrupts.Activated())
	wantID := interrupt.BeforeToolCallID("t3", "approval")
	un := rec.Interrupts.Unanswered()
	require.Len(t, un, 1)
	assert.Equal(t, wantID, un[0].ID)
	assert.Equal(t, "v1:before_tool_call:t3:"+interrupt.NameUUID("approval"), un[0].ID, "SPEC I2 id form")
	assert.Equal(t, "approval", un[0].Name)
	assert.Equal(t, interrupt.SourceHook, un[0].Source)
	assert.JSONEq(t, `{"tool":"delete_files","paths":["a.txt"]}`, string(un[0].Reason))
	require.NotEmpty(t, rec.Pending)
	assert.Equal(t, before, exportOf(t, st, goldenHook), "loading through OpenAgent changes no record")

	runs := &goldenRuns{}
	a := goldenAgent(t, goldenManager(t, st, goldenHook), runs)
	assert.Equal(t, before, exportOf(t, st, goldenHook), "building an agent changes no record")
	require.True(t, agenttest.Interrupted(t, a))
	require.Len(t, agenttest.Interrupts(t, a), 1)
	assert.Equal(t, wantID, agenttest.Interrupts(t, a)[0].ID)
	res := invokeOK(t, a, agent.Resume(interrupt.Respond(wantID, "y")), agent.StopEndTurn)
	assert.Equal(t, "done: moved a.txt, deleted a.txt", res.Message.Text())
	assert.Equal(t, map[string]int{"t3": 1}, runs.all(), "t2 finished before the interrupt and is not run again")

	msgs := agenttest.Messages(t, a)
	requireGoodHistory(t, msgs)
	require.Len(t, msgs, 8)
	assert.Equal(t, []string{"t2", "t3"}, toolUseIDs(msgs[5]))
	assert.Equal(t, []string{"t2=moved a.txt", "t3=deleted a.txt"}, toolResultTexts(msgs[6]))
	trust, ok := agenttest.State(t, a).Get("trust")
	require.True(t, ok, "the state survived")
	assert.JSONEq(t, `["move_files"]`, string(trust))

	// What was saved is the finished run.
	_, rec, err = goldenManager(t, st, goldenHook).OpenAgent(ctx, agent.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, texts(msgs), texts(rec.Messages))
	assert.False(t, rec.Interrupts.Activated())
	assert.Equal(t, 0, rec.Interrupts.Len())
	assert.Empty(t, rec.Pending)
	assert.JSONEq(t, `["move_files"]`, string(rec.State["trust"]))
}

// SPEC S1, S5 (golden, schema 1), I2, A6, A7: a session of schema version 1
// stopped inside a tool (tc.Interrupt) after a sibling tool of the same
// cycle finished loads and resumes in a fresh agent: the interrupted tool
// runs again from the start with its answer, the finished one does not run.
func TestGolden_ToolInterruptResumes(t *testing.T) {
	ctx := context.Background()
	st := goldenStore(t, goldenTool)
	before := exportOf(t, st, goldenTool)

	_, rec, err := goldenManager(t, st, goldenTool).OpenAgent(ctx, agent.DefaultID)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, []string{"user:deploy"}, texts(rec.Messages))
	assert.JSONEq(t, `["app"]`, string(rec.State["inspected"]))
	require.True(t, rec.Interrupts.Activated())
	wantID := interrupt.ToolCallID("t5", "confirm-deploy")
	un := rec.Interrupts.Unanswered()
	require.Len(t, un, 1)
	assert.Equal(t, wantID, un[0].ID)
	assert.Equal(t, "v1:tool_call:t5:"+interrupt.NameUUID("confirm-deploy"), un[0].ID, "SPEC I2 id form")
	assert.Equal(t, interrupt.SourceTool, un[0].Source)
	assert.JSONEq(t, `{"target":"prod"}`, string(un[0].Reason))
	var pending struct {
		Completed []model.ToolResult `json:"completedToolResults"`
	}
	require.NoError(t, json.Unmarshal(rec.Pending, &pending))
	require.Len(t, pending.Completed, 1)
	assert.Equal(t, "t4", pending.Completed[0].ToolUseID)
	assert.Equal(t, before, exportOf(t, st, goldenTool), "loading through OpenAgent changes no record")

	runs := &goldenRuns{}
	a := goldenAgent(t, goldenManager(t, st, goldenTool), runs)
	assert.Equal(t, before, exportOf(t, st, goldenTool), "building an agent changes no record")
	require.True(t, agenttest.Interrupted(t, a))
	res := invokeOK(t, a, agent.Resume(interrupt.Respond(wantID, "yes")), agent.StopEndTurn)
	assert.Equal(t, "done: inspected app, deployed to prod", res.Message.Text())
	assert.Equal(t, map[string]int{"t5": 1}, runs.all(), "t4 finished before the interrupt and is not run again")

	msgs := agenttest.Messages(t, a)
	requireGoodHistory(t, msgs)
	require.Len(t, msgs, 4)
	assert.Equal(t, []string{"t4", "t5"}, toolUseIDs(msgs[1]))
	assert.Equal(t, []string{"t4=inspected app", "t5=deployed to prod"}, toolResultTexts(msgs[2]))
	inspected, ok := agenttest.State(t, a).Get("inspected")
	require.True(t, ok, "the state survived")
	assert.JSONEq(t, `["app"]`, string(inspected))

	_, rec, err = goldenManager(t, st, goldenTool).OpenAgent(ctx, agent.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, texts(msgs), texts(rec.Messages))
	assert.False(t, rec.Interrupts.Activated())
	assert.Empty(t, rec.Pending)
}

// SPEC S1, S5 (golden, schema 1), A3, A11: a finished session of schema
// version 1 loads with its whole history and state, and nothing pending.
func TestGolden_FinishedSessionLoads(t *testing.T) {
	ctx := context.Background()
	st := goldenStore(t, goldenFinished)
	before := exportOf(t, st, goldenFinished)

	_, rec, err := goldenManager(t, st, goldenFinished).OpenAgent(ctx, agent.DefaultID)
	require.NoError(t, err)
	require.NotNil(t, rec)
	requireGoodHistory(t, rec.Messages)
	assert.Equal(t, []string{
		"user:move a.txt", "assistant:", "user:", "assistant:done: moved a.txt",
		"user:tidy a.txt", "assistant:", "user:", "assistant:done: moved a.txt, deleted a.txt",
	}, texts(rec.Messages))
	assert.Equal(t, []string{"t1"}, toolUseIDs(rec.Messages[1]))
	assert.Equal(t, []string{"t1=moved a.txt"}, toolResultTexts(rec.Messages[2]))
	assert.Equal(t, []string{"t2", "t3"}, toolUseIDs(rec.Messages[5]))
	assert.Equal(t, []string{"t2=moved a.txt", "t3=deleted a.txt"}, toolResultTexts(rec.Messages[6]))
	assert.Equal(t, []string{"trust"}, mapKeys(rec.State))
	assert.JSONEq(t, `["move_files","delete_files"]`, string(rec.State["trust"]))
	assert.False(t, rec.Interrupts.Activated())
	assert.Equal(t, 0, rec.Interrupts.Len())
	assert.Empty(t, rec.Pending)
	assert.Equal(t, before, exportOf(t, st, goldenFinished), "loading through OpenAgent changes no record")

	// A fresh agent sees the same, is not interrupted, and saves nothing.
	runs := &goldenRuns{}
	a := goldenAgent(t, goldenManager(t, st, goldenFinished), runs)
	assert.False(t, agenttest.Interrupted(t, a))
	assert.False(t, agenttest.Incomplete(t, a))
	assert.Equal(t, texts(rec.Messages), texts(agenttest.Messages(t, a)))
	trust, ok := agenttest.State(t, a).Get("trust")
	require.True(t, ok)
	assert.JSONEq(t, `["move_files","delete_files"]`, string(trust))
	assert.Empty(t, runs.all())
	assert.Equal(t, before, exportOf(t, st, goldenFinished), "building an agent changes no record")
}

// SPEC S2, S5: every golden file is a person-readable session export, in
// the indentation json.MarshalIndent gives it, whose every record carries
// "schemaVersion": 1 and data that is a JSON object with "state" and
// "interrupts".
func TestGolden_ExportsCarrySchemaVersion1(t *testing.T) {
	entries, err := os.ReadDir(goldenDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var want []string
	for _, id := range goldenSessions {
		want = append(want, id+".json")
	}
	assert.ElementsMatch(t, want, names, "%s holds one export per golden session and nothing else", goldenDir)

	for _, id := range goldenSessions {
		t.Run(id, func(t *testing.T) {
			b, err := os.ReadFile(goldenFile(id))
			require.NoError(t, err)
			exp := goldenExport(t, id)
			again, err := json.MarshalIndent(exp, "", "  ")
			require.NoError(t, err)
			assert.Equal(t, string(again)+"\n", string(b), "indented for people (json.MarshalIndent, 2 spaces)")

			var raw struct {
				Records []map[string]json.RawMessage `json:"records"`
			}
			require.NoError(t, json.Unmarshal(b, &raw))
			require.Len(t, raw.Records, len(exp.Records))
			for i, r := range exp.Records {
				assert.Equal(t, "1", string(raw.Records[i]["schemaVersion"]), "record %d: schemaVersion is written", i)
				assert.Equal(t, 1, r.SchemaVersion, "record %d", i)
				assert.Equal(t, persistence.KindAgent, r.Kind, "record %d", i)
				assert.Equal(t, agent.DefaultID, r.ID, "record %d", i)
				assert.Positive(t, r.Version, "record %d", i)
				assert.False(t, r.UpdatedAt.IsZero(), "record %d", i)
				assert.NotEmpty(t, r.Messages, "record %d", i)

				var data map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(r.Data, &data), "record %d: data is a JSON object", i)
				for _, k := range []string{"state", "interrupts"} {
					v, ok := data[k]
					require.True(t, ok, "record %d: data has %q", i, k)
					assert.True(t, strings.HasPrefix(string(v), "{"), "record %d: data.%s is an object: %s", i, k, v)
				}
				for j, m := range r.Messages {
					var obj map[string]json.RawMessage
					assert.NoError(t, json.Unmarshal(m, &obj), "record %d: message %d is a JSON object", i, j)
				}
			}
		})
	}
}

// SPEC S5: a golden record whose schema version is changed to 2 is refused
// with a typed error (ErrSchemaVersion, ErrDamaged, *DamageError) naming its
// key, both when the session manager opens it and when an agent is built on
// it; a later save, by a writer opened before the change or straight
// through the store, does not overwrite it.
func TestGolden_NewerSchemaVersionRefused(t *testing.T) {
	ctx := context.Background()
	for _, id := range goldenSessions {
		for _, r := range goldenExport(t, id).Records {
			key := persistence.Key{SessionID: id, Kind: r.Kind, ID: r.ID}
			t.Run(key.String(), func(t *testing.T) {
				st := goldenStore(t, id)
				// A writer opened while the record was still of schema 1.
				w, rec, err := goldenManager(t, st, id).OpenAgent(ctx, r.ID)
				require.NoError(t, err)
				require.NotNil(t, rec)

				var stored persistence.Record
				require.True(t, st.Tamper(key, func(rec *persistence.Record) {
					rec.SchemaVersion = 2
					stored = *cloneRecord(rec)
				}))

				requireSchemaDamage := func(err error) {
					t.Helper()
					require.Error(t, err)
					assert.ErrorIs(t, err, persistence.ErrSchemaVersion)
					assert.ErrorIs(t, err, persistence.ErrDamaged)
					var de *persistence.DamageError
					require.True(t, errors.As(err, &de), "%T %v", err, err)
					assert.Equal(t, key, de.Key)
					assert.Contains(t, err.Error(), fmt.Sprintf("session %q", id))
					assert.Contains(t, err.Error(), string(key.Kind))
					assert.Contains(t, err.Error(), fmt.Sprintf("%q", key.ID))
				}

				_, got, err := goldenManager(t, st, id).OpenAgent(ctx, r.ID)
				requireSchemaDamage(err)
				assert.Nil(t, got)

				a, err := newGoldenAgent(goldenManager(t, st, id), &goldenRuns{})
				if a != nil {
					_ = a.Close(ctx)
				}
				requireSchemaDamage(err)

				rec.Messages = append(rec.Messages, model.UserText("overwrite?"))
				requireSchemaDamage(w.Save(ctx, rec, persistence.SaveMessage))
				_, err = st.Save(ctx, persistence.SaveOptions{Durable: true},
					persistence.Change{Key: key, Base: stored.Version, Data: json.RawMessage(`{}`)})
				requireSchemaDamage(err)

				require.True(t, st.Tamper(key, func(rec *persistence.Record) {
					assert.Equal(t, 2, rec.SchemaVersion, "the record was not overwritten")
					assert.Equal(t, stored.Version, rec.Version)
					assert.Equal(t, stored.UpdatedAt, rec.UpdatedAt)
					assert.Equal(t, string(stored.Data), string(rec.Data))
					assert.Equal(t, stored.Messages, rec.Messages)
				}))
			})
		}
	}
}

// cloneRecord returns a deep copy of a stored record, to keep past a Tamper.
func cloneRecord(r *persistence.Record) *persistence.Record {
	c := *r
	c.Data = bytes.Clone(r.Data)
	c.Messages = make([]json.RawMessage, len(r.Messages))
	for i, m := range r.Messages {
		c.Messages[i] = bytes.Clone(m)
	}
	return &c
}

// The damage tests below (SPEC S5) edit a stored golden record by hand,
// through memory.Store.Tamper, as a person editing the database would, and
// load it as a fresh process would: OpenAgent, then agent.New. A record that
// does not decode strictly must be refused with a *DamageError naming the
// session, the owner (its Key) and the part ("data", "message N", "pending
// work", "record"); it is never loaded silently, never overwritten, nothing
// panics, and the other sessions of the store stay usable.

// goldenStoreAll imports every golden session into one fresh memory store.
func goldenStoreAll(t *testing.T) *memory.Store {
	t.Helper()
	st := memory.New()
	for _, id := range goldenSessions {
		require.NoError(t, export.Write(context.Background(), st, goldenExport(t, id)))
	}
	return st
}

// storedRecord reads a record as stored, past every check.
func storedRecord(t *testing.T, st *memory.Store, key persistence.Key) *persistence.Record {
	t.Helper()
	var out *persistence.Record
	require.True(t, st.Tamper(key, func(r *persistence.Record) { out = cloneRecord(r) }), "no record %s", key)
	return out
}

// goldenPart is one JSON part of a stored agent record: its data (index -1)
// or message index.
type goldenPart struct{ index int }

// name is the DamageError Part that damage in p is reported as by OpenAgent.
func (p goldenPart) name() string {
	if p.index < 0 {
		return "data"
	}
	return fmt.Sprintf("message %d", p.index)
}

func (p goldenPart) get(r *persistence.Record) []byte {
	if p.index < 0 {
		return r.Data
	}
	return r.Messages[p.index]
}

func (p goldenPart) set(r *persistence.Record, b []byte) {
	if p.index < 0 {
		r.Data = b
		return
	}
	r.Messages[p.index] = b
}

// goldenParts lists the parts of a golden session's agent record.
func goldenParts(t *testing.T, sessionID string) []goldenPart {
	t.Helper()
	r := goldenExport(t, sessionID).Records[0]
	out := []goldenPart{{index: -1}}
	for i := range r.Messages {
		out = append(out, goldenPart{index: i})
	}
	return out
}

// compacted returns b without insignificant space.
func compacted(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, b))
	return buf.Bytes()
}

// goldenPartJSON returns part p of a golden session's agent record as it
// is stored after an Import, compacted.
func goldenPartJSON(t *testing.T, sessionID string, p goldenPart) []byte {
	t.Helper()
	return compacted(t, p.get(storedRecord(t, goldenStore(t, sessionID), agentKey(sessionID))))
}

// tamperPart replaces part p of the stored record with edit(its JSON,
// compacted first so that edits and positions see no layout).
func tamperPart(t *testing.T, st *memory.Store, key persistence.Key, p goldenPart, edit func([]byte) []byte) {
	t.Helper()
	require.True(t, st.Tamper(key, func(r *persistence.Record) { p.set(r, edit(compacted(t, p.get(r)))) }))
}

// loadMode says what loading a tampered record may give.
type loadMode int

const (
	// mustDamage: a *DamageError.
	mustDamage loadMode = iota
	// damageOrExact: a *DamageError, or a load that reads back exactly as
	// stored (a flipped letter inside a string value, a free-form key).
	damageOrExact
)

// checkLoad opens the agent of key in st as a fresh process would and checks
// the outcome against mode: a *DamageError naming key and one of parts, or
// (damageOrExact) an exact load. Either way nothing panics, the stored
// record is not changed, and the other golden sessions in st still load.
func checkLoad(t *testing.T, st *memory.Store, key persistence.Key, mode loadMode, parts ...string) {
	t.Helper()
	ctx := context.Background()
	stored := storedRecord(t, st, key)
	var (
		rec             *persistence.AgentRecord
		openErr, newErr error
	)
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("loading %s panicked: %v", key, p)
			}
		}()
		_, rec, openErr = goldenManager(t, st, key.SessionID).OpenAgent(ctx, key.ID)
		if openErr != nil {
			return
		}
		var a *agent.Agent
		a, newErr = newGoldenAgent(goldenManager(t, st, key.SessionID), &goldenRuns{})
		if a != nil {
			_ = a.Close(ctx)
		}
	}()

	assert.Equal(t, stored, storedRecord(t, st, key), "loading changed the stored record")
	for _, id := range goldenSessions {
		if id != key.SessionID {
			_, _, err := goldenManager(t, st, id).OpenAgent(ctx, agent.DefaultID)
			assert.NoError(t, err, "session %q stays usable", id)
		}
	}

	err := openErr
	if err == nil {
		err = newErr
	}
	if err != nil {
		var de *persistence.DamageError
		require.True(t, errors.As(err, &de), "want a *DamageError, got %T: %v", err, err)
		assert.Equal(t, key, de.Key, "%v", err)
		assert.Contains(t, parts, de.Part, "%v", err)
		assert.ErrorIs(t, err, persistence.ErrDamaged)
		assert.Contains(t, err.Error(), fmt.Sprintf("session %q", key.SessionID))
		assert.Contains(t, err.Error(), fmt.Sprintf("%s %q", key.Kind, key.ID))
		return
	}
	if mode == mustDamage {
		t.Fatalf("loaded silently (OpenAgent and agent.New accepted it); stored record:\n%s", describeRecord(stored))
	}
	requireExactLoad(t, stored, rec)
}

// describeRecord shows a stored record's data and messages, compacted.
func describeRecord(r *persistence.Record) string {
	show := func(b []byte) string {
		var buf bytes.Buffer
		if json.Compact(&buf, b) != nil {
			return fmt.Sprintf("%q", b)
		}
		return buf.String()
	}
	out := "data: " + show(r.Data)
	for i, m := range r.Messages {
		out += fmt.Sprintf("\nmessage %d: %s", i, show(m))
	}
	return out
}

// requireExactLoad checks that rec, encoded again, is the stored record:
// a load that keeps everything stored and invents nothing.
func requireExactLoad(t *testing.T, stored *persistence.Record, rec *persistence.AgentRecord) {
	t.Helper()
	data, err := json.Marshal(struct {
		State      map[string]json.RawMessage `json:"state"`
		Interrupts *interrupt.State           `json:"interrupts"`
		Pending    json.RawMessage            `json:"pending,omitempty"`
	}{rec.State, rec.Interrupts, rec.Pending})
	require.NoError(t, err)
	assert.Equal(t, genericJSON(t, stored.Data), genericJSON(t, data), "the data reads back as stored")
	require.Len(t, rec.Messages, len(stored.Messages))
	for i, m := range rec.Messages {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		assert.Equal(t, genericJSON(t, stored.Messages[i]), genericJSON(t, b), "message %d reads back as stored", i)
	}
}

func genericJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "%s", b)
	return v
}

func encodeGeneric(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// jsonKey is the path of one object key in a JSON value: object keys
// (string) and array indexes (int), ending with the key itself.
type jsonKey []any

func (k jsonKey) String() string {
	var b strings.Builder
	for _, s := range k {
		switch s := s.(type) {
		case string:
			b.WriteString("." + s)
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		}
	}
	return b.String()
}

func (k jsonKey) last() string { return k[len(k)-1].(string) }

// objectKeys lists the path of every object key in v, depth first.
func objectKeys(v any, prefix jsonKey) []jsonKey {
	var out []jsonKey
	switch v := v.(type) {
	case map[string]any:
		for _, k := range mapKeys(v) {
			p := append(slices.Clone(prefix), k)
			out = append(out, p)
			out = append(out, objectKeys(v[k], p)...)
		}
	case []any:
		for i, x := range v {
			out = append(out, objectKeys(x, append(slices.Clone(prefix), i))...)
		}
	}
	return out
}

// editKey applies fn to the object holding the last key of path in v.
func editKey(v any, path jsonKey, fn func(obj map[string]any, key string)) {
	for _, s := range path[:len(path)-1] {
		switch s := s.(type) {
		case string:
			v = v.(map[string]any)[s]
		case int:
			v = v.([]any)[s]
		}
	}
	fn(v.(map[string]any), path.last())
}

// freeForm reports whether the key at path is inside a value the schema
// does not fix (the agent's key/value state, a tool's input, an interrupt's
// reason or response, a tool result's JSON): renaming or dropping it
// changes a value, not the record's shape, and loads exactly.
func freeForm(part goldenPart, path jsonKey) bool {
	if part.index < 0 && len(path) > 1 && path[0] == "state" {
		return true
	}
	for _, s := range path[:len(path)-1] {
		if s == "input" || s == "reason" || s == "response" || s == "json" {
			return true
		}
	}
	return false
}

// blockKind reports whether the key at path names the kind of a message's
// content block ("text", "toolUse", "toolResult"). model.ContentBlock keeps
// a block of a kind it does not know whole (Other) and writes it back
// unchanged, so a renamed kind reads back exactly, as a block of an unknown
// kind.
func blockKind(path jsonKey) bool {
	n := len(path)
	if n < 3 || path[n-3] != "content" {
		return false
	}
	if _, ok := path[n-2].(int); !ok {
		return false
	}
	// content of a message (top level, or the pending assistantMessage),
	// not of a tool result (its blocks are {"text"}/{"json"} only).
	return n == 3 || path[n-4] == "assistantMessage"
}

// optionalKeys may be absent from a record of schema 1 (omitempty).
var optionalKeys = []string{"reason", "response", "pending", "assistantMessage", "text", "json", "toolUse", "toolResult"}

// damagePart is the Part that a broken key at path of part p is reported as.
func damagePart(p goldenPart, path jsonKey) string {
	if p.index < 0 && len(path) > 1 && path[0] == "pending" {
		return "pending work"
	}
	return p.name()
}

// SPEC S5: in every golden session, every key of the stored agent data and
// of every stored message, renamed (to another case, which encoding/json
// alone would still accept, or to another name), is refused with a
// *DamageError naming the record and the part it is in ("data", "message
// N", "pending work"), never a silent load; a renamed key inside a
// free-form value (state, tool input, interrupt reason) loads exactly, and
// so does a renamed content-block kind (an unknown kind is kept whole).
func TestGolden_RenamedFieldIsDamage(t *testing.T) {
	renames := []struct {
		name string
		to   func(string) string
	}{
		{"case", func(k string) string { return strings.ToUpper(k[:1]) + k[1:] }},
		{"other", func(k string) string { return k + "_renamed" }},
	}
	for _, id := range goldenSessions {
		key := agentKey(id)
		for _, p := range goldenParts(t, id) {
			tree := genericJSON(t, goldenPartJSON(t, id, p))
			for _, path := range objectKeys(tree, nil) {
				for _, rn := range renames {
					t.Run(fmt.Sprintf("%s/%s%s/%s", id, p.name(), path, rn.name), func(t *testing.T) {
						st := goldenStoreAll(t)
						tamperPart(t, st, key, p, func(b []byte) []byte {
							v := genericJSON(t, b)
							editKey(v, path, func(obj map[string]any, k string) {
								obj[rn.to(k)] = obj[k]
								delete(obj, k)
							})
							return encodeGeneric(t, v)
						})
						switch {
						case freeForm(p, path):
							checkLoad(t, st, key, damageOrExact, damagePart(p, path))
						case blockKind(path):
							// A misspelt kind is damage of its message; another
							// key is a kind kept whole, which then pairs with no
							// tool use or result ("record").
							checkLoad(t, st, key, damageOrExact, damagePart(p, path), "record", "pending work")
						default:
							checkLoad(t, st, key, mustDamage, damagePart(p, path))
						}
					})
				}
			}
		}
	}
}

// SPEC S5: in every golden session, every required key of the stored agent
// data and of every stored message, removed, is refused with a *DamageError
// naming the record and the part ("data", "message N", "pending work";
// "record" for pending work that no longer fits the interrupt state), never
// a silent load. Removing an optional key (an interrupt's reason or
// response, a block's one member) gives a *DamageError or an exact load.
func TestGolden_MissingFieldIsDamage(t *testing.T) {
	for _, id := range goldenSessions {
		key := agentKey(id)
		for _, p := range goldenParts(t, id) {
			tree := genericJSON(t, goldenPartJSON(t, id, p))
			for _, path := range objectKeys(tree, nil) {
				t.Run(fmt.Sprintf("%s/%s%s", id, p.name(), path), func(t *testing.T) {
					st := goldenStoreAll(t)
					tamperPart(t, st, key, p, func(b []byte) []byte {
						v := genericJSON(t, b)
						editKey(v, path, func(obj map[string]any, k string) { delete(obj, k) })
						return encodeGeneric(t, v)
					})
					switch {
					case freeForm(p, path), slices.Contains(optionalKeys, path.last()):
						checkLoad(t, st, key, damageOrExact, damagePart(p, path), "record")
					default:
						checkLoad(t, st, key, mustDamage, damagePart(p, path))
					}
				})
			}
		}
	}
}

// flipPositions returns about n byte positions spread over a part of
// length size, the first and last included.
func flipPositions(size, n int) []int {
	var out []int
	for i := range n {
		out = append(out, i*(size-1)/(n-1))
	}
	return slices.Compact(out)
}

// SPEC S5: a bit flipped in the stored data or a stored message of a golden
// session (at spread positions, in the low bit, the ASCII case bit and the
// high bit) gives a *DamageError naming the record and a part it may be
// reported as, or, when the flipped JSON still reads back exactly (a
// flipped letter inside a string value), an exact load; never a panic,
// never a load that differs from what is stored.
func TestGolden_BitFlipIsDamageOrExactLoad(t *testing.T) {
	for _, id := range goldenSessions {
		key := agentKey(id)
		for _, p := range goldenParts(t, id) {
			size := len(goldenPartJSON(t, id, p))
			// "record": a message that reads back but no longer pairs with
			// its neighbours (a tool result answering no tool use).
			parts := []string{p.name(), "record"}
			if p.index < 0 {
				parts = append(parts, "pending work")
			}
			for _, pos := range flipPositions(size, 16) {
				for _, bit := range []byte{0x01, 0x20, 0x80} {
					t.Run(fmt.Sprintf("%s/%s/%d^%#x", id, p.name(), pos, bit), func(t *testing.T) {
						st := goldenStoreAll(t)
						tamperPart(t, st, key, p, func(b []byte) []byte {
							b[pos] ^= bit
							return b
						})
						checkLoad(t, st, key, damageOrExact, parts...)
					})
				}
			}
		}
	}
}

// SPEC S5: the stored data or a stored message of a golden session cut
// short (empty, one byte, a quarter, half, three quarters, all but the last
// byte) is a *DamageError naming the record and that part.
func TestGolden_TruncationIsDamage(t *testing.T) {
	for _, id := range goldenSessions {
		key := agentKey(id)
		for _, p := range goldenParts(t, id) {
			size := len(goldenPartJSON(t, id, p))
			for _, n := range slices.Compact([]int{0, 1, size / 4, size / 2, 3 * size / 4, size - 1}) {
				t.Run(fmt.Sprintf("%s/%s/%d", id, p.name(), n), func(t *testing.T) {
					st := goldenStoreAll(t)
					tamperPart(t, st, key, p, func(b []byte) []byte { return b[:n] })
					checkLoad(t, st, key, mustDamage, p.name())
				})
			}
		}
	}
}

// SPEC S5, A3: stored pending work that decodes but does not fit the rest
// of the record is damage, found when the agent is built: a *DamageError
// naming the record that also matches agent.ErrSnapshot, never a silent
// load.
func TestGolden_InconsistentPendingWorkIsDamage(t *testing.T) {
	cases := []struct {
		name string
		edit func(data map[string]any)
	}{
		{"interrupts activated, pending removed", func(d map[string]any) { delete(d, "pending") }},
		{"pending kind bogus", func(d map[string]any) { d["pending"].(map[string]any)["kind"] = "bogus" }},
		{"pending tool cycle without tool uses", func(d map[string]any) {
			d["pending"].(map[string]any)["assistantMessage"].(map[string]any)["content"] = []any{map[string]any{"text": "no tools"}}
		}},
	}
	for _, id := range []string{goldenHook, goldenTool} {
		key := agentKey(id)
		for _, c := range cases {
			t.Run(id+"/"+c.name, func(t *testing.T) {
				st := goldenStoreAll(t)
				tamperPart(t, st, key, goldenPart{index: -1}, func(b []byte) []byte {
					v := genericJSON(t, b)
					c.edit(v.(map[string]any))
					return encodeGeneric(t, v)
				})
				_, _, err := goldenManager(t, st, id).OpenAgent(context.Background(), agent.DefaultID)
				require.NoError(t, err, "the record decodes; it does not fit together")
				checkLoad(t, st, key, mustDamage, "record")
				a, err := newGoldenAgent(goldenManager(t, st, id), &goldenRuns{})
				if a != nil {
					_ = a.Close(context.Background())
				}
				assert.ErrorIs(t, err, agent.ErrSnapshot)
			})
		}
	}
}

// editData returns a tamperPart edit that changes the agent data as a
// generic JSON object.
func editData(t *testing.T, fn func(data map[string]any)) func([]byte) []byte {
	return func(b []byte) []byte {
		v := genericJSON(t, b)
		fn(v.(map[string]any))
		return encodeGeneric(t, v)
	}
}

// dig walks a generic JSON value by object keys (string) and array
// indexes (int).
func dig(v any, path ...any) any {
	for _, s := range path {
		switch s := s.(type) {
		case string:
			v = v.(map[string]any)[s]
		case int:
			v = v.([]any)[s]
		}
	}
	return v
}

// SPEC S5, A3: the pending work is held to what the history is held to:
// its assistant message and its finished results pass the checks a stored
// message passes (a history message with the same defect is a *DamageError
// naming "message N"), and every finished result answers a tool use of the
// cycle. A defect is a *DamageError naming the record ("pending work" or
// "record") that matches agent.ErrSnapshot, never a silent load.
func TestGolden_PendingWorkCheckedLikeHistory(t *testing.T) {
	obj := func(d map[string]any, path ...any) map[string]any { return dig(d, path...).(map[string]any) }
	cases := []struct {
		name string
		edit func(d map[string]any)
	}{
		{"assistant message of role user", func(d map[string]any) {
			obj(d, "pending", "assistantMessage")["role"] = "user"
		}},
		{"tool use without toolUseId", func(d map[string]any) {
			obj(d, "pending", "assistantMessage", "content", 1, "toolUse")["toolUseId"] = ""
		}},
		{"finished result of status bogus", func(d map[string]any) {
			obj(d, "pending", "completedToolResults", 0)["status"] = "bogus"
		}},
		{"finished result without toolUseId", func(d map[string]any) {
			obj(d, "pending", "completedToolResults", 0)["toolUseId"] = ""
		}},
		{"finished result of no tool use of the cycle", func(d map[string]any) {
			obj(d, "pending", "completedToolResults", 0)["toolUseId"] = "t9"
		}},
	}
	for _, id := range []string{goldenHook, goldenTool} {
		key := agentKey(id)
		for _, c := range cases {
			t.Run(id+"/"+c.name, func(t *testing.T) {
				st := goldenStoreAll(t)
				tamperPart(t, st, key, goldenPart{index: -1}, editData(t, c.edit))
				checkLoad(t, st, key, mustDamage, "pending work", "record")
				a, err := newGoldenAgent(goldenManager(t, st, id), &goldenRuns{})
				if a != nil {
					_ = a.Close(context.Background())
				}
				assert.ErrorIs(t, err, agent.ErrSnapshot)
			})
		}
	}
}

// SPEC S5: a stored content block is an object with exactly one key, of a
// kind Braid writes (model.ContentBlock: "exactly one field is set"; blocks
// of other kinds, such as images, are kept whole). An empty block, a block
// with two kinds, an empty tool-result block, or a block whose kind was
// renamed ("text" -> "Text", "toolUse" -> "ToolUse") is a *DamageError
// naming the record and the part, never a silent load. An image block, a
// kind Braid keeps whole, loads exactly.
func TestGolden_MalformedContentBlockIsDamage(t *testing.T) {
	rename := func(path []any, from, to string) func(v map[string]any) {
		return func(v map[string]any) {
			b := dig(v, path...).(map[string]any)
			b[to] = b[from]
			delete(b, from)
		}
	}
	cases := []struct {
		name    string
		session string
		part    goldenPart
		edit    func(v map[string]any)
		want    loadMode
	}{
		{"empty block", goldenFinished, goldenPart{0}, func(v map[string]any) {
			v["content"] = []any{map[string]any{}}
		}, mustDamage},
		{"block of two kinds", goldenFinished, goldenPart{0}, func(v map[string]any) {
			dig(v, "content", 0).(map[string]any)["toolUse"] = map[string]any{"toolUseId": "t9", "name": "move_files", "input": map[string]any{}}
		}, mustDamage},
		{"empty tool-result block", goldenFinished, goldenPart{2}, func(v map[string]any) {
			dig(v, "content", 0, "toolResult").(map[string]any)["content"] = []any{map[string]any{}}
		}, mustDamage},
		{"text renamed Text", goldenFinished, goldenPart{0}, rename([]any{"content", 0}, "text", "Text"), mustDamage},
		{"toolUse renamed ToolUse", goldenFinished, goldenPart{1}, rename([]any{"content", 0}, "toolUse", "ToolUse"), mustDamage},
		{"toolResult renamed tool_result", goldenFinished, goldenPart{2}, rename([]any{"content", 0}, "toolResult", "tool_result"), mustDamage},
		{"pending toolUse renamed ToolUse", goldenHook, goldenPart{-1},
			rename([]any{"pending", "assistantMessage", "content", 0}, "toolUse", "ToolUse"), mustDamage},
		{"image block loads exactly", goldenFinished, goldenPart{0}, func(v map[string]any) {
			v["content"] = append(v["content"].([]any), map[string]any{
				"image": map[string]any{"format": "png", "source": map[string]any{"bytes": "iVBORw0KGgo="}}})
		}, damageOrExact},
	}
	for _, c := range cases {
		t.Run(c.session+"/"+c.name, func(t *testing.T) {
			key := agentKey(c.session)
			st := goldenStoreAll(t)
			tamperPart(t, st, key, c.part, editData(t, c.edit))
			parts := []string{c.part.name(), "record"}
			if c.part.index < 0 {
				parts = []string{"pending work", "record"}
			}
			if c.want == mustDamage {
				checkLoad(t, st, key, mustDamage, parts...)
				return
			}
			_, rec, err := goldenManager(t, st, c.session).OpenAgent(context.Background(), agent.DefaultID)
			require.NoError(t, err)
			requireExactLoad(t, storedRecord(t, st, key), rec)
			checkLoad(t, st, key, damageOrExact, parts...)
		})
	}
}
