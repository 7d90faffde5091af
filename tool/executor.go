package tool

import (
	"context"
	"errors"
	"sync"
)

// ErrExecutor reports an executor that broke the Task contract: it ran a
// task it had not prepared (or whose Prepare said not to run it), ran or
// prepared one twice, or returned leaving a task without a result when
// none was interrupted. The agent fails the invocation with it.
var ErrExecutor = errors.New("the tool executor broke the task contract")

// Task is one tool call of a turn, as an executor sees it.
//
// Prepare runs the call's BeforeToolCall hooks. It reports whether the tool
// should run, and whether the call was interrupted. Run runs the tool (and
// its AfterToolCall hooks) and reports whether it was interrupted.
//
// An executor calls Prepare at most once per task, and Run at most once,
// only after Prepare returned run true; a call out of that order runs
// nothing and fails the invocation with ErrExecutor (a Run without its
// Prepare would run the tool without its BeforeToolCall hooks: an approval
// skipped).
type Task interface {
	Prepare(ctx context.Context) (run, interrupted bool)
	Run(ctx context.Context) (interrupted bool)
}

// ExclusiveTask is implemented by tasks whose tool may be Exclusive; the
// agent's tasks implement it. ExclusiveKey is valid once Prepare has
// returned (a hook may have changed the tool the call runs).
type ExclusiveTask interface {
	Task
	ExclusiveKey() string
}

// TaskKey returns the exclusive key of a prepared task, or "" if it has
// none.
func TaskKey(t Task) string {
	if e, ok := t.(ExclusiveTask); ok {
		return e.ExclusiveKey()
	}
	return ""
}

// Executor runs the tasks of one turn. Every task it starts has finished
// when Execute returns. It never runs two tasks with the same non-empty
// TaskKey at once: they run in the order given, and after one of them is
// interrupted (in Prepare or Run) the later ones with its key do not run
// (see Exclusive). It may leave tasks unprepared or unrun only after one
// was interrupted: when none was, every task must end with a result (its
// Prepare said not to run it, or it ran), or the invocation fails with
// ErrExecutor rather than append a tool use without its result.
type Executor interface {
	Execute(ctx context.Context, tasks []Task)
}

// Concurrent is the default executor: it prepares every task in order (so
// hooks see a stable order), then runs all tools that may run at once. Tools
// not interrupted run to completion even when another is interrupted (SPEC A6).
// Tasks with one exclusive key (see Exclusive) run one after another, in
// order, beside the others; the first of them interrupted stops the rest of
// its key, which stay without a result until a resume.
type Concurrent struct{}

// Execute implements Executor.
func (Concurrent) Execute(ctx context.Context, tasks []Task) {
	var groups [][]Task // one per exclusive key, one per task without a key
	index := map[string]int{}
	blocked := map[string]bool{}
	for _, t := range tasks {
		run, interrupted := t.Prepare(ctx)
		key := ""
		if run || interrupted {
			key = TaskKey(t)
		}
		if key != "" && blocked[key] {
			continue // an earlier call of its key waits for an answer
		}
		if interrupted && key != "" {
			blocked[key] = true
		}
		if !run {
			continue
		}
		if key == "" {
			groups = append(groups, []Task{t})
			continue
		}
		if g, ok := index[key]; ok {
			groups[g] = append(groups[g], t)
			continue
		}
		index[key] = len(groups)
		groups = append(groups, []Task{t})
	}
	switch len(groups) {
	case 0:
		return
	case 1:
		runInOrder(ctx, groups[0])
		return
	}
	var wg sync.WaitGroup
	wg.Add(len(groups))
	for _, g := range groups {
		go func() {
			defer wg.Done()
			runInOrder(ctx, g)
		}()
	}
	wg.Wait()
}

// runInOrder runs tasks one after another until one is interrupted.
func runInOrder(ctx context.Context, tasks []Task) {
	for _, t := range tasks {
		if t.Run(ctx) {
			return
		}
	}
}

// Sequential runs tasks one after another and stops at the first interrupted
// one: later tools do not start (SPEC A6). It runs no two tasks at once, so
// it honours exclusive keys as it is.
type Sequential struct{}

// Execute implements Executor.
func (Sequential) Execute(ctx context.Context, tasks []Task) {
	for _, t := range tasks {
		run, interrupted := t.Prepare(ctx)
		if interrupted {
			return
		}
		if run && t.Run(ctx) {
			return
		}
	}
}
