// Package multiagent is the contract Graph and Swarm share (SPEC M2, M3,
// M7): the run and node Status, the results of a run and of its nodes,
// and the orchestrator hook events (MultiAgentInitialized,
// BeforeMultiAgentInvocation, BeforeNodeCall, AfterNodeCall,
// AfterMultiAgentInvocation).
//
// A run is resumed the way an agent is: with agent.Resume(responses...),
// or agent.ParseInput of the Strands interruptResponse JSON. Results are
// values: nothing in them aliases the orchestrator's live state.
//
// Hooks of BeforeNodeCall and AfterNodeCall run on the node's goroutine,
// so the hooks of nodes that run concurrently run concurrently: they must
// be safe for concurrent use.
package multiagent
