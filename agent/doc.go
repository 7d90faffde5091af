// Package agent is the agent loop: a model, tools and hooks, run as an actor
// on Proto.Actor, that can stop for interrupts and resume where it stopped.
//
// Each agent is an actor that owns its session (SPEC R1): history,
// key/value state, interrupt state and pending work. An Agent is a client
// handle: Invoke and Stream send one invocation to the actor and wait with
// the caller's context (SPEC R5); the actor runs invocations one at a time
// (SPEC A12), each on a goroutine it owns, so its mailbox answers Cancel,
// Status and Snapshot at once (SPEC R3); Close cancels the running
// invocation and replies once it has stopped. Hooks and tools see a
// *View of the running work (SPEC R7). The actor's messages have protobuf
// forms (proto/braidv1/agent.proto, SPEC R2), so other actors and other
// processes can drive it; with a Session and Config.IdleTimeout it is
// passivated when idle and activated again from the store by the next
// message (SPEC R4).
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
