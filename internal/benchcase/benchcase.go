// Package benchcase holds the benchmark scenarios shared by the go test
// benchmarks and the bench command: the scenarios of the Strands
// TypeScript peer benchmark (shared/peer-bench/strands-ts), rebuilt on Braid.
//
//	b1 InvokeOneTool: invoke(prompt); the model asks for one tool, the tool
//	   runs, the model answers.
//	b2 InterruptResume: a BeforeToolCall hook interrupts, the caller resumes
//	   with "y", the tool runs, the model answers.
//	b5 Interrupt: the first half of b2, the agent left waiting on its
//	   interrupt (memory per agent, activation of a passivated agent).
//
// "Fresh" builds a new agent (and model) for every operation, in a shared
// actor system, as a server building an agent per request would; tools are
// defined once. "Reused" keeps one agent and resets its history first, like
// the peer's reused-reset mode.
package benchcase

import (
	"context"
	"fmt"
	"time"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

type paths struct {
	Paths []string `json:"paths"`
}

var input = paths{Paths: []string{"a/b/c.txt"}}

// Model answers like the peer's scripted model: a tool call with a new id
// while the last message is a prompt, "done" once the results are in.
func Model() *model.ScriptedModel {
	n := 0
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		n++
		return model.ToolTurn(model.Call(fmt.Sprintf("tooluse_%d", n), "delete_files", input)), nil
	})
}

// Tools returns the scenario's tool list: delete_files, which returns true.
func Tools() []tool.Tool {
	return []tool.Tool{tool.New("delete_files", "Delete files at the given paths",
		func(ctx context.Context, tc *tool.Context, in paths) (bool, error) { return true, nil })}
}

// Approval is the seed's approval hook on BeforeToolCallEvent.
func Approval() hook.Provider {
	return hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != "delete_files" {
			return nil
		}
		var in paths
		if err := ev.ToolUse.DecodeInput(&in); err != nil {
			return err
		}
		ans, err := ev.Interrupt("myapp-approval", map[string]any{"paths": in.Paths})
		if err != nil {
			return err
		}
		if s, _ := ans.String(); s != "y" {
			ev.CancelTool("User denied permission to delete files")
		}
		return nil
	})
}

// Env is what the scenarios share across operations.
type Env struct {
	Sys   *actors.System
	Tools []tool.Tool
}

// NewEnv starts an actor system and builds the tools.
func NewEnv() (*Env, error) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	if err != nil {
		return nil, err
	}
	return &Env{Sys: sys, Tools: Tools()}, nil
}

// NewEnvConfig is NewEnv with a configured actor system (an Observer that
// counts passivations, for instance).
func NewEnvConfig(cfg actors.Config) (*Env, error) {
	sys, err := actors.NewSystem(cfg)
	if err != nil {
		return nil, err
	}
	return &Env{Sys: sys, Tools: Tools()}, nil
}

// Close stops the actor system.
func (e *Env) Close() error { return e.Sys.Close(context.Background()) }

// NewAgent builds one agent of the scenario.
func (e *Env) NewAgent(hooks ...hook.Provider) (*agent.Agent, error) {
	return agent.New(context.Background(), agent.Config{Model: Model(), Tools: e.Tools, Hooks: hooks, System: e.Sys})
}

// NewSessionAgent builds one agent of the scenario on a session, its actor
// passivated after idle without a message (zero: never).
func (e *Env) NewSessionAgent(sess agent.Session, idle time.Duration, hooks ...hook.Provider) (*agent.Agent, error) {
	return agent.New(context.Background(), agent.Config{Model: Model(), Tools: e.Tools, Hooks: hooks, System: e.Sys, Session: sess, IdleTimeout: idle})
}

// InvokeOneTool runs scenario b1 once on a.
func InvokeOneTool(ctx context.Context, a *agent.Agent) error {
	res, err := a.Invoke(ctx, agent.Text("delete old files"))
	if err != nil {
		return err
	}
	if res.StopReason != agent.StopEndTurn {
		return fmt.Errorf("b1: stop reason %s", res.StopReason)
	}
	return nil
}

// InterruptResume runs scenario b2 once on a (built with Approval).
func InterruptResume(ctx context.Context, a *agent.Agent) error {
	id, err := interruptOnce(ctx, a, "b2")
	if err != nil {
		return err
	}
	res, err := a.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	if err != nil {
		return err
	}
	if res.StopReason != agent.StopEndTurn {
		return fmt.Errorf("b2 resume: stop reason %s", res.StopReason)
	}
	return nil
}

// Interrupt invokes a (built with Approval) once and checks that it stopped
// on one interrupt, which stays open: b5's interrupted agent.
func Interrupt(ctx context.Context, a *agent.Agent) error {
	_, err := interruptOnce(ctx, a, "b5")
	return err
}

// interruptOnce invokes a with the scenario's prompt and returns the id of
// the one interrupt it must stop on.
func interruptOnce(ctx context.Context, a *agent.Agent, scenario string) (string, error) {
	res, err := a.Invoke(ctx, agent.Text("delete old files"))
	if err != nil {
		return "", err
	}
	if res.StopReason != agent.StopInterrupt || len(res.Interrupts) != 1 {
		return "", fmt.Errorf("%s: want one interrupt, got %s %v", scenario, res.StopReason, res.Interrupts)
	}
	return res.Interrupts[0].ID, nil
}

// Fresh runs op on a new agent and closes it.
func (e *Env) Fresh(ctx context.Context, op func(context.Context, *agent.Agent) error, hooks ...hook.Provider) error {
	a, err := e.NewAgent(hooks...)
	if err != nil {
		return err
	}
	err = op(ctx, a)
	if cerr := a.Close(ctx); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// Reused resets a's history and runs op on it.
func Reused(ctx context.Context, a *agent.Agent, op func(context.Context, *agent.Agent) error) error {
	if err := a.SetMessages(ctx, nil); err != nil {
		return err
	}
	return op(ctx, a)
}

// Hop is the actor messaging of one invocation alone: a job that does
// nothing (the deletion of a key that is not there) sent to a's actor,
// run on the job goroutine, and answered: the same messages, draft and
// goroutine as an invocation, without the loop.
func Hop(ctx context.Context, a *agent.Agent) error {
	return a.DeleteState(ctx, "absent")
}

// Life builds an agent and closes it: its identity bound, its actor
// activated and stopped, and the identity released.
func (e *Env) Life(ctx context.Context) error {
	a, err := e.NewAgent()
	if err != nil {
		return err
	}
	return a.Close(ctx)
}

// SessionCycle is peer scenario b4, the seed's server pattern: request 1
// builds an agent on a session manager over store and is interrupted;
// request 2 builds a new agent on a new manager with the same session id
// and resumes. sessionID should be new for every cycle, as in the peer.
func (e *Env) SessionCycle(ctx context.Context, store persistence.Store, sessionID string, opts ...persistence.ManagerOption) error {
	serve := func(in agent.Input) (*agent.Result, error) {
		sess, err := persistence.NewSessionManager(store, sessionID, opts...)
		if err != nil {
			return nil, err
		}
		a, err := agent.New(context.Background(), agent.Config{Model: Model(), Tools: e.Tools, Hooks: []hook.Provider{Approval()}, System: e.Sys, Session: sess})
		if err != nil {
			return nil, err
		}
		defer a.Close(ctx)
		return a.Invoke(ctx, in)
	}
	res, err := serve(agent.Text("delete old files"))
	if err != nil {
		return err
	}
	if res.StopReason != agent.StopInterrupt || len(res.Interrupts) != 1 {
		return fmt.Errorf("b4: want one interrupt, got %s", res.StopReason)
	}
	res, err = serve(agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	if err != nil {
		return err
	}
	if res.StopReason != agent.StopEndTurn {
		return fmt.Errorf("b4 resume: stop reason %s", res.StopReason)
	}
	return nil
}
