// Package agent is the agent loop: a model, tools and hooks, run as an actor
// on Proto.Actor, that can stop for interrupts and resume where it stopped.
//
// An Agent is a handle to its actor. Invoke and Stream send one invocation to
// the actor and wait; the actor runs invocations one at a time (SPEC A12), so
// concurrent callers queue. The invocation itself runs on its own goroutine
// so the mailbox stays responsive (Cancel, Close).
//
// One invocation:
//
//	BeforeInvocation, MessageAdded(user),
//	  BeforeModelCall, AfterModelCall,
//	  BeforeTools, BeforeToolCall×n, AfterToolCall×n, AfterTools,
//	  MessageAdded(assistant tool use), MessageAdded(user tool results),
//	  BeforeModelCall, AfterModelCall, MessageAdded(assistant),
//	AfterInvocation
//
// The assistant tool-use message and its results are appended together, only
// when every tool of the cycle has a result (SPEC A3). When a hook or tool
// raises an interrupt, the cycle finishes what it can (concurrent tools run
// to completion), the pending assistant message and the finished results are
// kept in the interrupt state, the state is activated and saved, and only then
// is the caller told: Result.StopReason is StopInterrupt and
// Result.Interrupts lists what to answer. Invoke(ctx, Resume(...)) answers
// them: no user message is added, the model is not called, the stored tool
// cycle is replayed, finished tools are not run again, and the loop goes on.
package agent
