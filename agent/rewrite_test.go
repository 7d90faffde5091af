package agent_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
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

// pathsLog records, safely across goroutines, what tools and hooks saw.
type pathsLog struct {
	mu  sync.Mutex
	got []string
}

func (l *pathsLog) add(s ...string) {
	l.mu.Lock()
	l.got = append(l.got, s...)
	l.mu.Unlock()
}

func (l *pathsLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// sandbox is a BeforeToolCall hook that rewrites every call of
// delete_files to act on "sandbox/<path>" instead, through SetToolUse.
func sandbox() hook.Provider {
	return hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != "delete_files" {
			return nil
		}
		var in pathsIn
		if err := ev.ToolUse.DecodeInput(&in); err != nil {
			return err
		}
		for i, p := range in.Paths {
			in.Paths[i] = "sandbox/" + p
		}
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		tu := ev.ToolUse
		tu.Input = raw
		ev.SetToolUse(tu)
		return nil
	})
}

// SPEC A1, A3 (and Strands Python's BeforeToolCallEvent.tool_use): a
// BeforeToolCall callback that rewrites the call with SetToolUse makes the
// tool run with the rewritten input; later callbacks, the tool's context
// and AfterToolCall see the rewrite; the history keeps the tool use as the
// model sent it, answered by one result under the model's tool-use id.
func TestBeforeToolCall_A1_SetToolUseRunsTheToolWithTheRewrittenInput(t *testing.T) {
	ctx := context.Background()
	seen := &pathsLog{}
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		seen.add("tool:" + in.Paths[0])
		seen.add("context:" + string(tc.ToolUse.Input))
		return "deleted " + in.Paths[0], nil
	})
	after := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		seen.add("later:" + ev.ToolUse.InputMap()["paths"].([]any)[0].(string))
		return nil
	})
	afterCall := hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error {
		seen.add("after:" + ev.ToolUse.InputMap()["paths"].([]any)[0].(string))
		return nil
	})
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
		Tools: []tool.Tool{del}, Hooks: []hook.Provider{sandbox(), after, afterCall}})
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, []string{"later:sandbox/a", "tool:sandbox/a", `context:{"paths":["sandbox/a"]}`, "after:sandbox/a"}, seen.list())

	snap, err := a.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, snap.Messages)
	uses := snap.Messages[1].ToolUses()
	require.Len(t, uses, 1)
	assert.Equal(t, "t1", uses[0].ToolUseID)
	assert.JSONEq(t, `{"paths":["a"]}`, string(uses[0].Input), "the history keeps the model's tool use")
	results := snap.Messages[2].ToolResults()
	require.Len(t, results, 1)
	assert.Equal(t, "deleted sandbox/a", results[0].Text())
}

// SPEC A1, A13: SetToolUse may name another tool, which runs instead (an
// unknown name gets the error result "Unknown tool: <name>"); the tool-use
// id stays the model's whatever the rewrite says.
func TestBeforeToolCall_A1_SetToolUseMayNameAnotherTool(t *testing.T) {
	for _, to := range []string{"trash_files", "no_such_tool"} {
		t.Run(to, func(t *testing.T) {
			ctx := context.Background()
			del, dels := countingTool("delete_files")
			trash, trashes := countingTool("trash_files")
			rename := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
				if ev.ToolUse.Name == "delete_files" {
					ev.SetToolUse(model.ToolUse{ToolUseID: "forged", Name: to, Input: ev.ToolUse.Input})
				}
				return nil
			})
			var ranTool []string
			record := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
				name := "<nil>"
				if ev.Tool != nil {
					name = ev.Tool.Spec().Name
				}
				ranTool = append(ranTool, ev.ToolUse.ToolUseID+":"+name)
				return nil
			})
			a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
				Tools: []tool.Tool{del, trash}, Hooks: []hook.Provider{rename, record}})
			_, err := a.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			assert.Equal(t, 0, dels.total())
			snap, err := a.Snapshot(ctx)
			require.NoError(t, err)
			requireValidHistory(t, snap.Messages)
			result := snap.Messages[2].ToolResults()[0]
			assert.Equal(t, "t1", result.ToolUseID)
			if to == "trash_files" {
				assert.Equal(t, 1, trashes.get("t1"), "the tool the rewrite names runs, under the model's id")
				assert.Equal(t, "trash_files ok", result.Text())
				assert.Equal(t, []string{"t1:trash_files"}, ranTool)
				return
			}
			assert.Equal(t, 0, trashes.total())
			assert.Equal(t, model.ToolError, result.Status)
			assert.Equal(t, "Unknown tool: no_such_tool", result.Text())
			assert.Equal(t, []string{"t1:<nil>"}, ranTool)
		})
	}
}

// SPEC A1, I7: a callback that changes ToolUse or Tool in place instead of
// calling SetToolUse, or gives SetToolUse an input that is not JSON, fails
// the invocation with ErrBadInput: the change is not silently ignored, and
// no tool runs. Before, the tool ran with the model's input; and a Tool
// assigned was ignored, unless a SetToolUse came with it: then the tool
// assigned ran, under the name SetToolUse gave another.
func TestBeforeToolCall_A1_AToolUseChangedInPlaceFailsInsteadOfBeingIgnored(t *testing.T) {
	cases := map[string]func(ev *agent.BeforeToolCallEvent, other tool.Tool){
		"input assigned": func(ev *agent.BeforeToolCallEvent, _ tool.Tool) {
			ev.ToolUse.Input = json.RawMessage(`{"paths":["b"]}`)
		},
		"name assigned": func(ev *agent.BeforeToolCallEvent, _ tool.Tool) { ev.ToolUse.Name = "other" },
		"input bytes written": func(ev *agent.BeforeToolCallEvent, _ tool.Tool) {
			copy(ev.ToolUse.Input, `{"paths":["b"]}`)
		},
		"SetToolUse then assigned": func(ev *agent.BeforeToolCallEvent, _ tool.Tool) {
			ev.SetToolUse(model.ToolUse{Name: "delete_files", Input: json.RawMessage(`{"paths":["c"]}`)})
			ev.ToolUse.Input = json.RawMessage(`{"paths":["b"]}`)
		},
		"SetToolUse with an input that is not JSON": func(ev *agent.BeforeToolCallEvent, _ tool.Tool) {
			ev.SetToolUse(model.ToolUse{Name: "delete_files", Input: json.RawMessage(`{"paths":`)})
		},
		"tool assigned":     func(ev *agent.BeforeToolCallEvent, other tool.Tool) { ev.Tool = other },
		"tool assigned nil": func(ev *agent.BeforeToolCallEvent, _ tool.Tool) { ev.Tool = nil },
		"SetToolUse then tool assigned": func(ev *agent.BeforeToolCallEvent, other tool.Tool) {
			ev.SetToolUse(model.ToolUse{Name: "delete_files", Input: json.RawMessage(`{"paths":["c"]}`)})
			ev.Tool = other
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			del, dels := countingTool("delete_files")
			other, others := countingTool("other")
			h := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
				change(ev, other)
				return nil
			})
			a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
				Tools: []tool.Tool{del, other}, Hooks: []hook.Provider{h}})
			_, err := a.Invoke(ctx, agent.Text("go"))
			require.ErrorIs(t, err, agent.ErrBadInput)
			assert.Equal(t, 0, dels.total()+others.total(), "no tool runs")
			snap, err := a.Snapshot(ctx)
			require.NoError(t, err)
			assert.Empty(t, snap.Messages, "the failed prompt is taken back (SPEC A3)")
		})
	}
}

// rewriteRig builds, on a fresh runtime and the session "rewrite" of st, an
// agent whose BeforeToolCall hook sandboxes delete_files (sandbox), and
// whose at-most-once delete_files asks "confirm" before it deletes.
func rewriteRig(t *testing.T, st persistence.Store, seen *pathsLog, hookRuns *counter) *agent.Agent {
	t.Helper()
	sm, err := persistence.NewSessionManager(st, "rewrite")
	require.NoError(t, err)
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		seen.add(in.Paths[0] + " " + tc.IdempotencyKey())
		if _, err := tc.Interrupt("confirm", in.Paths); err != nil {
			return "", err
		}
		return "deleted " + in.Paths[0], nil
	}, tool.AtMostOnce())
	count := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		hookRuns.inc(ev.ToolUse.ToolUseID)
		return nil
	})
	return newAgent(t, agent.Config{System: actorstest.System(t), Session: sm,
		Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
		Tools: []tool.Tool{del}, Hooks: []hook.Provider{count, sandbox()}})
}

// SPEC A1, A7, S1, S6: a rewritten call that the tool interrupts runs
// again, on resume, with the rewritten input: the BeforeToolCall hooks run
// again and rewrite it again (as in Strands; the rewrite itself is not
// stored), also after the agent was rebuilt from its session on a fresh
// runtime. The tool's interrupt id, its idempotency key and its recorded
// result are all the model's tool-use id's, and the history keeps the
// model's tool use.
func TestBeforeToolCall_A7_ARewriteAppliesAgainWhenTheCallIsResumed(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	seen, hookRuns := &pathsLog{}, &counter{}
	a := rewriteRig(t, st, seen, hookRuns)
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Equal(t, []string{interrupt.ToolCallID("t1", "confirm")}, ids(res.Interrupts))
	var reason []string
	require.NoError(t, res.Interrupts[0].DecodeReason(&reason))
	assert.Equal(t, []string{"sandbox/a"}, reason, "the tool ran with the rewritten input")
	require.NoError(t, a.Close(ctx))

	hookRuns2 := &counter{}
	a2 := rewriteRig(t, st, seen, hookRuns2)
	res, err = a2.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, hookRuns2.get("t1"), "the hook ran again on resume")
	key := "rewrite/" + agent.DefaultID + "/t1"
	assert.Equal(t, []string{"sandbox/a " + key, "sandbox/a " + key}, seen.list(), "both runs: rewritten input, the model's id's key")

	snap, err := a2.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, snap.Messages)
	assert.JSONEq(t, `{"paths":["a"]}`, string(snap.Messages[1].ToolUses()[0].Input), "the history keeps the model's tool use")
	results := snap.Messages[2].ToolResults()
	require.Len(t, results, 1)
	assert.Equal(t, "t1", results[0].ToolUseID)
	assert.Equal(t, "deleted sandbox/a", results[0].Text())
}

// SPEC A1, S6: a call renamed by SetToolUse to an at-most-once tool runs
// as that tool: its start is saved under the model's tool-use id, so when
// a crash cuts it off, the agent rebuilt from its SQLite session does not
// run it again on recovery (the hook renames it again): it stops with
// braid.recovery, whose reason names the tool and input the call ran
// with, and only "rerun" runs it again, once.
func TestBeforeToolCall_S6_ACallRenamedToAnAtMostOnceToolIsNotRerunAfterACrash(t *testing.T) {
	ctx := context.Background()
	var crash *export.Session
	runs := &counter{}
	build := func(st persistence.Store) *agent.Agent {
		sm, err := persistence.NewSessionManager(st, "rename")
		require.NoError(t, err)
		fetch, fetches := countingTool("fetch")
		t.Cleanup(func() { assert.Zero(t, fetches.total(), "the model's tool never runs") })
		del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
			runs.inc(tc.ToolUse.ToolUseID)
			if crash == nil {
				exp, err := export.Read(ctx, st, "rename")
				if err != nil {
					return "", err
				}
				crash = exp
			}
			return "deleted " + in.Paths[0], nil
		}, tool.AtMostOnce())
		rename := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			if ev.ToolUse.Name == "fetch" {
				ev.SetToolUse(model.ToolUse{Name: "delete_files", Input: json.RawMessage(`{"paths":["sandbox/a"]}`)})
			}
			return nil
		})
		return newAgent(t, agent.Config{System: actorstest.System(t), Session: sm,
			Model: toolThenText("done", model.Call("t1", "fetch", pathsIn{Paths: []string{"a"}})),
			Tools: []tool.Tool{fetch, del}, Hooks: []hook.Provider{rename}})
	}
	res, err := build(openSQLite(t)).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	require.NotNil(t, crash)

	st := openSQLite(t)
	require.NoError(t, export.Write(ctx, st, crash))
	a := build(st)
	res, err = a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, agent.RecoveryInterrupt, in.Name)
	var reason agent.RecoveryReason
	require.NoError(t, in.DecodeReason(&reason))
	assert.Equal(t, "delete_files", reason.Tool)
	assert.JSONEq(t, `{"paths":["sandbox/a"]}`, string(reason.Input))
	assert.Equal(t, 1, runs.get("t1"), "not run again without an answer")

	res, err = a.Invoke(ctx, agent.Resume(respond(in, agent.RecoveryRerun)))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, runs.get("t1"))
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, "fetch", msgs[1].ToolUses()[0].Name, "the history keeps the model's tool use")
	assert.Equal(t, "deleted sandbox/a", msgs[2].ToolResults()[0].Text())
}

// SPEC A1, A10: the last SetToolUse of a callback wins, and AfterToolCall's
// Retry runs the call again as rewritten; a Stream shows the call as the
// model asked for it (ToolUseEvent, the messages) and its result under the
// model's tool-use id.
func TestBeforeToolCall_A1_TheLastRewriteRunsOnRetryAndTheStreamShowsTheModelsCall(t *testing.T) {
	ctx := context.Background()
	seen := &pathsLog{}
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		seen.add(tc.ToolUse.Name + ":" + in.Paths[0])
		return "deleted " + in.Paths[0], nil
	})
	fetch, fetches := countingTool("fetch")
	twice := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		ev.SetToolUse(model.ToolUse{Name: "fetch", Input: json.RawMessage(`{"paths":["x"]}`)})
		ev.SetToolUse(model.ToolUse{Name: "delete_files", Input: json.RawMessage(`{"paths":["sandbox/a"]}`)})
		return nil
	})
	retried := false
	retry := hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error {
		seen.add("after:" + ev.ToolUse.Name)
		if !retried {
			retried = true
			ev.Retry()
		}
		return nil
	})
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
		Tools: []tool.Tool{del, fetch}, Hooks: []hook.Provider{twice, retry}, MaxToolRetries: 1})
	var uses []model.ToolUse
	var results []model.ToolResult
	for ev, err := range a.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *agent.ToolUseEvent:
			uses = append(uses, e.ToolUse)
		case *agent.ToolResultEvent:
			results = append(results, e.Result)
		}
	}
	assert.Zero(t, fetches.total(), "the first rewrite was replaced")
	assert.Equal(t, []string{"delete_files:sandbox/a", "after:delete_files", "delete_files:sandbox/a", "after:delete_files"}, seen.list())
	require.Len(t, uses, 1)
	assert.JSONEq(t, `{"paths":["a"]}`, string(uses[0].Input), "the stream shows the model's call")
	require.Len(t, results, 1)
	assert.Equal(t, "t1", results[0].ToolUseID)
	assert.Equal(t, "deleted sandbox/a", results[0].Text())
}
