package persistence_test

// Golden sessions of schema version 1 (SPEC S1, S5): folders written by a
// real agent over a FileStore, committed under testdata/golden/v1, so a later
// build that cannot read them, or reads them differently, fails here. The
// tests only read testdata; they work on copies in temp folders. Regenerate
// with
//
//	go test ./persistence -run TestGolden -update
//
// (timestamps change, nothing else should).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden sessions under testdata/golden")

// goldenDir holds the golden sessions of schema version 1, one
// session_<id> folder each.
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
	a, err := agent.New(agent.Config{
		Model: m,
		Tools: []tool.Tool{pathsTool("move_files", "moved"), pathsTool("delete_files", "deleted"),
			pathsTool("inspect_files", "inspected"), deploy},
		Hooks:   []hook.Provider{approval},
		Session: sess,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

// goldenOpen copies the golden session folder into a fresh store root and
// returns the root and a new session manager over it.
func goldenOpen(t *testing.T, sessionID string) (string, *persistence.SessionManager) {
	t.Helper()
	root := t.TempDir()
	copyTree(t, filepath.Join(goldenDir, "session_"+sessionID), filepath.Join(root, "session_"+sessionID))
	return root, goldenManager(t, root, sessionID)
}

func goldenManager(t *testing.T, root, sessionID string) *persistence.SessionManager {
	t.Helper()
	st, err := persistence.NewFileStore(root)
	require.NoError(t, err)
	sess, err := persistence.NewSessionManager(st, sessionID)
	require.NoError(t, err)
	return sess
}

// invokeOK runs one invocation that must succeed with the given stop reason.
func invokeOK(t *testing.T, a *agent.Agent, in agent.Input, want agent.StopReason) *agent.Result {
	t.Helper()
	res, err := a.Invoke(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, want, res.StopReason, "result: %v", res)
	return res
}

// goldenWrite runs the scenarios against a FileStore and copies the session
// folders over the golden ones.
func goldenWrite(t *testing.T) {
	t.Helper()
	root := t.TempDir()
	interruptID := func(res *agent.Result) string {
		t.Helper()
		require.Len(t, res.Interrupts, 1)
		return res.Interrupts[0].ID
	}
	hookRun := func(sessionID string, finish bool) {
		a := goldenAgent(t, goldenManager(t, root, sessionID), &goldenRuns{})
		res := invokeOK(t, a, agent.Text("move a.txt"), agent.StopInterrupt)
		invokeOK(t, a, agent.Resume(interrupt.Respond(interruptID(res), "t")), agent.StopEndTurn)
		res = invokeOK(t, a, agent.Text("tidy a.txt"), agent.StopInterrupt)
		if finish {
			invokeOK(t, a, agent.Resume(interrupt.Respond(interruptID(res), "t")), agent.StopEndTurn)
		}
	}
	hookRun(goldenHook, false)
	hookRun(goldenFinished, true)
	a := goldenAgent(t, goldenManager(t, root, goldenTool), &goldenRuns{})
	invokeOK(t, a, agent.Text("deploy"), agent.StopInterrupt)

	for _, id := range goldenSessions {
		dst := filepath.Join(goldenDir, "session_"+id)
		require.NoError(t, os.RemoveAll(dst))
		copyTree(t, filepath.Join(root, "session_"+id), dst)
	}
}

// copyTree copies the regular files under src to dst, leaving out lock
// files and temp files (which hold nothing a reader needs).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if d.Name() == ".lock" || strings.Contains(d.Name(), ".tmp") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	}))
}

// readTree maps every file under dir (relative path) to its bytes; a
// missing dir gives an empty map.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out, err := readTreeErr(dir)
	require.NoError(t, err)
	return out
}

// readTreeErr is readTree for goroutines other than the test's (hooks,
// tools), which must not call t.FailNow.
func readTreeErr(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	return out, err
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
	root, sess := goldenOpen(t, goldenHook)
	before := readTree(t, root)

	rec, err := sess.LoadAgent(ctx, agent.DefaultID)
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
	assert.Equal(t, before, readTree(t, root), "loading changes no file")

	runs := &goldenRuns{}
	a := goldenAgent(t, goldenManager(t, root, goldenHook), runs)
	require.True(t, a.Interrupted())
	require.Len(t, a.Interrupts(), 1)
	assert.Equal(t, wantID, a.Interrupts()[0].ID)
	res := invokeOK(t, a, agent.Resume(interrupt.Respond(wantID, "y")), agent.StopEndTurn)
	assert.Equal(t, "done: moved a.txt, deleted a.txt", res.Message.Text())
	assert.Equal(t, map[string]int{"t3": 1}, runs.all(), "t2 finished before the interrupt and is not run again")

	msgs := a.Messages()
	requireGoodHistory(t, msgs)
	require.Len(t, msgs, 8)
	assert.Equal(t, []string{"t2", "t3"}, toolUseIDs(msgs[5]))
	assert.Equal(t, []string{"t2=moved a.txt", "t3=deleted a.txt"}, toolResultTexts(msgs[6]))
	trust, ok := a.State().Get("trust")
	require.True(t, ok, "the state survived")
	assert.JSONEq(t, `["move_files"]`, string(trust))

	// What was saved is the finished run.
	rec, err = goldenManager(t, root, goldenHook).LoadAgent(ctx, agent.DefaultID)
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
	root, sess := goldenOpen(t, goldenTool)
	before := readTree(t, root)

	rec, err := sess.LoadAgent(ctx, agent.DefaultID)
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
	assert.Equal(t, before, readTree(t, root), "loading changes no file")

	runs := &goldenRuns{}
	a := goldenAgent(t, goldenManager(t, root, goldenTool), runs)
	require.True(t, a.Interrupted())
	res := invokeOK(t, a, agent.Resume(interrupt.Respond(wantID, "yes")), agent.StopEndTurn)
	assert.Equal(t, "done: inspected app, deployed to prod", res.Message.Text())
	assert.Equal(t, map[string]int{"t5": 1}, runs.all(), "t4 finished before the interrupt and is not run again")

	msgs := a.Messages()
	requireGoodHistory(t, msgs)
	require.Len(t, msgs, 4)
	assert.Equal(t, []string{"t4", "t5"}, toolUseIDs(msgs[1]))
	assert.Equal(t, []string{"t4=inspected app", "t5=deployed to prod"}, toolResultTexts(msgs[2]))
	inspected, ok := a.State().Get("inspected")
	require.True(t, ok, "the state survived")
	assert.JSONEq(t, `["app"]`, string(inspected))

	rec, err = goldenManager(t, root, goldenTool).LoadAgent(ctx, agent.DefaultID)
	require.NoError(t, err)
	assert.Equal(t, texts(msgs), texts(rec.Messages))
	assert.False(t, rec.Interrupts.Activated())
	assert.Empty(t, rec.Pending)
}

// SPEC S1, S5 (golden, schema 1), A3, A11: a finished session of schema
// version 1 loads with its whole history and state, and nothing pending.
func TestGolden_FinishedSessionLoads(t *testing.T) {
	ctx := context.Background()
	root, sess := goldenOpen(t, goldenFinished)
	before := readTree(t, root)

	rec, err := sess.LoadAgent(ctx, agent.DefaultID)
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

	// A fresh agent sees the same, is not interrupted, and saves nothing.
	runs := &goldenRuns{}
	a := goldenAgent(t, goldenManager(t, root, goldenFinished), runs)
	assert.False(t, a.Interrupted())
	assert.False(t, a.Incomplete())
	assert.Equal(t, texts(rec.Messages), texts(a.Messages()))
	trust, ok := a.State().Get("trust")
	require.True(t, ok)
	assert.JSONEq(t, `["move_files","delete_files"]`, string(trust))
	assert.Empty(t, runs.all())
	assert.Equal(t, before, readTree(t, root), "loading changes no file")
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// goldenFiles returns the .json files of a golden session, relative to the
// store root (session_<id>/...).
func goldenFiles(t *testing.T, sessionID string) []string {
	t.Helper()
	var out []string
	for rel := range readTree(t, filepath.Join(goldenDir, "session_"+sessionID)) {
		if strings.HasSuffix(rel, ".json") {
			out = append(out, filepath.ToSlash(filepath.Join("session_"+sessionID, rel)))
		}
	}
	slices.Sort(out)
	require.NotEmpty(t, out)
	return out
}

// SPEC S2, S5: every golden file is person-readable JSON that carries
// "schemaVersion": 1; the layout is the Strands-like one.
func TestGolden_FilesCarrySchemaVersion1(t *testing.T) {
	for _, id := range goldenSessions {
		t.Run(id, func(t *testing.T) {
			files := goldenFiles(t, id)
			assert.Contains(t, files, "session_"+id+"/session.json")
			assert.Contains(t, files, "session_"+id+"/agents/agent_default/agent.json")
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(goldenDir, f))
				require.NoError(t, err)
				var v map[string]any
				require.NoError(t, json.Unmarshal(b, &v), f)
				assert.Equal(t, float64(1), v["schemaVersion"], f)
				assert.Contains(t, string(b), "\n  \"schemaVersion\": 1,", "%s: indented for people", f)
				if strings.Contains(f, "/messages/") {
					assert.Regexp(t, `/messages/message_\d+\.json$`, f)
				}
			}
		})
	}
}

// SPEC S5: a golden session with any one file's schemaVersion changed to 2
// is refused with a typed error (ErrSchemaVersion, *DamageError) that names
// the session and that file, both when the session manager loads it and
// when an agent is built on it; no file changes.
func TestGolden_NewerSchemaVersionRefused(t *testing.T) {
	ctx := context.Background()
	for _, id := range goldenSessions {
		for _, f := range goldenFiles(t, id) {
			t.Run(f, func(t *testing.T) {
				root := t.TempDir()
				copyTree(t, filepath.Join(goldenDir, "session_"+id), filepath.Join(root, "session_"+id))
				p := filepath.Join(root, filepath.FromSlash(f))
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				require.Contains(t, string(b), `"schemaVersion": 1`)
				require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), `"schemaVersion": 1`, `"schemaVersion": 2`, 1)), 0o644))
				before := readTree(t, root)

				rec, err := goldenManager(t, root, id).LoadAgent(ctx, agent.DefaultID)
				require.Error(t, err)
				assert.Nil(t, rec)
				assert.ErrorIs(t, err, persistence.ErrSchemaVersion)
				assert.ErrorIs(t, err, persistence.ErrDamaged)
				var de *persistence.DamageError
				require.True(t, errors.As(err, &de), "%T %v", err, err)
				assert.Equal(t, id, de.SessionID)
				assert.Equal(t, f, filepath.ToSlash(de.File))
				assert.Contains(t, err.Error(), f)
				assert.Contains(t, err.Error(), fmt.Sprintf("session %q", id))

				_, err = agent.New(agent.Config{Model: model.Scripted(), Session: goldenManager(t, root, id)})
				require.Error(t, err)
				assert.ErrorIs(t, err, persistence.ErrSchemaVersion)
				assert.True(t, errors.As(err, &de))

				assert.Equal(t, before, readTree(t, root), "nothing was overwritten")
			})
		}
	}
}
