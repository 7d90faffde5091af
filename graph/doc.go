// Package graph runs agents (and functions, and nested Graphs or Swarms)
// as the nodes of a directed graph (SPEC M8): edges, conditional edges,
// entry points, fan-in that runs a node once after every predecessor that
// will run, cycles, limits and timeouts. Ready nodes run concurrently,
// each on its node actor, owned by the graph's orchestrator actor (SPEC
// M1).
//
// Fan-in: a node runs when one of its edges is taken (the edge's source
// completed after the node last started, and its condition holds) and no
// source of its incoming edges can still run. A source that failed, was
// cancelled, or that nothing left to run can reach does not hold it back.
// Back edges (those that close a cycle, found by a depth-first search from
// the entry points, following edges in the order they were added) re-run
// their target but never hold it back. A node that waits for answers
// takes no edge: an edge into it taken meanwhile runs it again once the
// run it stopped in (resumed, it is one run) has ended.
//
// A BeforeNodeCall hook, or a node's agent, can interrupt: from the first
// interrupt on nothing new is scheduled, the nodes already running run to
// completion, and the run returns INTERRUPTED with every interrupt (SPEC
// M4). Answer them with g.Invoke(ctx, agent.Resume(...)): each answer
// goes to the node that raised it, and only those nodes run again (SPEC
// M5); the rest of the graph then carries on.
//
// With a Session the run is saved after every node and every invocation
// (SPEC M10), and a new process that builds the same graph with the same
// session id resumes it. The same graph means the same nodes, edges (a
// conditional edge counts as conditional, its condition's code unknown)
// and entry points, whatever the order they were added in, as long as the
// same edges close the cycles that run (the order of the nodes, edges and
// entry points decides that), the same ResetOnRevisit, and nodes of the
// same kinds (an agent, a nested Graph or Swarm, a Go function:
// actors.NodeKind; an agent's tools, model or prompt are its
// configuration, free to change): building a graph of another shape on a
// session whose run waits for a resume (or was cut off) fails with
// actors.ErrTopology, naming both shapes, or the nodes whose kind
// changed, and leaves the stored run as it was. Once the run has ended,
// a graph of any shape may start a new one.
package graph
