// Package agentnode has the executors a Graph or Swarm node can run
// (SPEC M1): an agent (Agent), a plain Go function (Func); a nested
// Graph or Swarm is a node by itself (graph.Builder, swarm.Builder).
//
// A node's agent is built by the node when its orchestrator opens it, at
// the node's owner path (SPEC I2): the ids of its interrupts carry the
// path, so equal ids raised by two nodes' agents do not collide, and its
// session record is its own (session, "agent", path). It resumes, never
// restarts, when an answer is routed to it.
package agentnode
