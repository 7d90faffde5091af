package tool

import (
	"context"
	"sync"
)

// Task is one tool call of a turn, as an executor sees it.
//
// Prepare runs the call's BeforeToolCall hooks. It reports whether the tool
// should run, and whether the call was interrupted. Run runs the tool (and
// its AfterToolCall hooks) and reports whether it was interrupted.
type Task interface {
	Prepare(ctx context.Context) (run, interrupted bool)
	Run(ctx context.Context) (interrupted bool)
}

// Executor runs the tasks of one turn. Every task it starts has finished
// when Execute returns.
type Executor interface {
	Execute(ctx context.Context, tasks []Task)
}

// Concurrent is the default executor: it prepares every task in order (so
// hooks see a stable order), then runs all tools that may run at once. Tools
// not interrupted run to completion even when another is interrupted (SPEC A6).
type Concurrent struct{}

// Execute implements Executor.
func (Concurrent) Execute(ctx context.Context, tasks []Task) {
	runnable := make([]Task, 0, len(tasks))
	for _, t := range tasks {
		if run, _ := t.Prepare(ctx); run {
			runnable = append(runnable, t)
		}
	}
	switch len(runnable) {
	case 0:
		return
	case 1:
		runnable[0].Run(ctx)
		return
	}
	var wg sync.WaitGroup
	wg.Add(len(runnable))
	for _, t := range runnable {
		go func() {
			defer wg.Done()
			t.Run(ctx)
		}()
	}
	wg.Wait()
}

// Sequential runs tasks one after another and stops at the first interrupted
// one: later tools do not start (SPEC A6).
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
