package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/proto/braidv1"
)

// SPEC S5, M10: damage to a stored graph's own record (its data, or an
// entry of its log: bit flips, truncations, renamed, case-changed and
// repeated keys) is, when a new graph loads it, a *DamageError naming
// the record, or ErrTopology when what changed names another graph or
// node; a text that still reads as a record loads. Never a panic, never
// another kind of error.
func TestGraphSession_DamagedOrchestratorRecordIsADamageError(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s1"), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "gated")}}
	}
	g := build(t, sessionGraph(r), cfg())
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))

	key := persistencetest.OnlyRecord(t, st, "s1", persistence.KindMultiAgent)
	// load builds a new graph on the store as it is (building opens the
	// stored run) and reports what loading it gave.
	load := func() error {
		g, err := sessionGraph(r).Build(ctx, cfg())
		if err != nil {
			return err
		}
		defer g.Close(ctx)
		_, err = g.Status(ctx)
		return err
	}
	persistencetest.RecordDamage(t, st, key, load, persistencetest.Edits{
		Data: [][2]string{
			{`"status":`, `"statuz":`},
			{`"status":`, `"Status":`},
			{`"seq":`, `"Seq":`},
			// A key twice, which encoding/json reads as its last value.
			{`"status":`, `"status":"COMPLETED","status":`},
			{`"seq":`, `"seq":1,"seq":`},
		},
		Messages: [][2]string{
			{`"status":`, `"Status":`},
			{`"run":`, `"runs":`},
			{`"started":`, `"start":`},
			{`"status":`, `"status":"NODE_STATUS_COMPLETED","status":`},
			{`"run":`, `"run":0,"run":`},
		},
	}, func(err error) bool { return errors.Is(err, actors.ErrTopology) })
}

// SPEC S5: what a graph stores it loads, whatever its users put in it: an
// interrupt whose name needs escaping in HTML and whose reason repeats a
// key (opaque JSON, kept as given), and a task message that no agent has
// checked yet (a content block that is not an object), stored while the
// entry node waits at its gate.
func TestGraphSession_WhatItStoresLoads(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	odd := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		_, err := ev.Interrupt("approve <a> & <b>", json.RawMessage(`{"k":1,"k":2}`))
		return err
	})
	r := newRecorder()
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s1"), System: actorstest.System(t), Hooks: []hook.Provider{odd}}
	}
	mk := func() *graph.Builder { return graph.NewBuilder().AddNode("a", textAgent(r, "a")) }
	g := build(t, mk(), cfg())
	res, err := g.Invoke(ctx, agent.Messages(model.Message{Role: model.RoleUser,
		Content: []model.ContentBlock{{Other: json.RawMessage(`"x"`)}}}))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))

	g2 := build(t, mk(), cfg())
	st2, err := g2.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st2.Interrupts, 1)
	require.Equal(t, "approve <a> & <b>", st2.Interrupts[0].Name)
	require.Equal(t, `{"k":1,"k":2}`, string(st2.Interrupts[0].Reason))
}

// badNode's executor returns a result whose content is not JSON.
type badNode struct{}

func (badNode) OpenNode(context.Context, actors.NodeEnv) (actors.NodeRunner, error) {
	return badRunner{}, nil
}

type badRunner struct{}

func (badRunner) RunNode(context.Context, *braidv1.NodeRun) *braidv1.NodeResult {
	return &braidv1.NodeResult{Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED,
		Result: &braidv1.NodeResult_Content{Content: []byte("hello")}}
}
func (badRunner) Progress(context.Context) (int64, error) { return 0, nil }
func (badRunner) Close(context.Context) error             { return nil }

// SPEC S5: a node whose executor (a NodeRunner of another package) returns
// a result that is not JSON fails, and the run's record, which holds the
// node's result, still loads.
func TestGraphSession_ANodeResultThatIsNotJSONFailsTheNode(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s1"), System: actorstest.System(t)}
	}
	mk := func() *graph.Builder { return graph.NewBuilder().AddNode("bad", badNode{}) }
	res, err := build(t, mk(), cfg()).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	require.Len(t, res.Results, 1)
	require.Error(t, res.Results[0].Err)
	assert.Contains(t, res.Results[0].Err.Error(), "not JSON")

	st2, err := build(t, mk(), cfg()).Status(ctx)
	require.NoError(t, err, "the record loads")
	assert.Equal(t, multiagent.StatusFailed, st2.Status)
}

// SPEC S5: a graph's record copied into another session is a record of
// another session: the graph built there gets a *DamageError naming the
// copy, and the original still resumes.
func TestGraphSession_ARecordCopiedToAnotherSessionIsDamage(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	cfg := func(session string) graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, session), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "gated")}}
	}
	g := build(t, sessionGraph(r), cfg("s1"))
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))

	key := persistencetest.OnlyRecord(t, st, "s1", persistence.KindMultiAgent)
	copied := persistence.Key{SessionID: "s2", Kind: key.Kind, ID: key.ID}
	persistencetest.CopyRecord(t, st, key, copied)
	_, err = sessionGraph(r).Build(ctx, cfg("s2"))
	var de *persistence.DamageError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, copied, de.Key)
	assert.ErrorContains(t, err, `of session "s1"`)

	g = build(t, sessionGraph(r), cfg("s1"))
	status, err := g.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, status.Status)
	require.NoError(t, g.Close(ctx))
}
