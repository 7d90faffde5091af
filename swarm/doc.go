// Package swarm runs a team of agents that pass the work to one another
// (SPEC M9). One agent runs at a time. Every agent of a swarm is given a
// tool, handoff_to_agent(agent_name, message, context), with which it
// names the agent that should carry on, what to tell it, and what it
// learned (a JSON object, the shared context). The call does not switch
// agents: the switch happens after the calling agent's run has ended, so
// a tool that the same agent runs alongside, and that interrupts, still
// belongs to that agent. A run that ends without a handoff is COMPLETED.
//
// Contracts:
//
//   - A node is an agent; its id is the agent config's ID, else its Name,
//     else node_<i>. The entry point is the first node unless one is set.
//   - Each node run is given one user message of text: the handoff that
//     led to it (if any), the user's request, the agents that worked on it
//     so far, the knowledge they shared, and the other agents with their
//     descriptions. Non-text blocks of the user's request follow the text.
//     An agent handed the work again carries on its conversation, or, with
//     Builder.ResetOnRevisit, starts from its initial history.
//   - A handoff takes effect only when the cycle that made it is complete
//     (its tool results are in the agent's history); the last one made in
//     the node's run names the next agent, and the contexts of all its
//     successful calls are shared (a later call's key wins). A call naming
//     an agent the swarm lacks is an error result and switches nothing.
//   - Limits end the run FAILED with a message naming the limit: "Max
//     handoffs reached: N", "Max iterations reached: N", "Execution timed
//     out: Xs", "Repetitive handoff: U unique nodes out of W recent
//     iterations". A node that runs longer than NodeTimeout fails, and so
//     does the run.
//   - BeforeNodeCall hooks may interrupt (SPEC M3); a node's agent may
//     interrupt from a tool (SPEC M4). The run then returns INTERRUPTED;
//     at most one node is interrupted at a time. Resume it with
//     s.Invoke(ctx, agent.Resume(...)): a gated node runs with the input
//     it was handed (the handoff message, not the original task), an
//     interrupted agent resumes where it stopped, and then the swarm goes
//     on, with any handoff the resumed agent makes.
//   - With a Session the run is saved after every node and every
//     invocation, the swarm's own state (node history, shared context,
//     counters) included (SPEC M10); a new process that builds the same
//     swarm with the same session id resumes it (the same agents, in any
//     order, entry point and ResetOnRevisit; their tools and models may
//     change: another team fails to build on a run that waits for a
//     resume, with actors.ErrTopology). A
//     fresh run (a prompt on a finished run) starts with an empty history
//     and shared context.
//
// A swarm is also a node of a Graph (AsNode), and the interrupts raised
// inside it surface at the top with ids that carry its path (SPEC M11).
package swarm
