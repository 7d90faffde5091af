// Package examples holds one runnable program per example of the Strands
// "Interrupts" page, and one of an agent used as another's tool, each in
// its own folder with a test that runs it:
//
//	approval       BeforeToolCallEvent approval of delete_files
//	batchapproval  BeforeToolsEvent approval of a whole batch
//	toolinterrupt  an interrupt raised from inside the tool
//	session        the seed's server pattern: a fresh agent per request on SQLite
//	graphapproval  Graph: BeforeNodeCallEvent approval of the cleanup node
//	graphgates     Graph: two concurrent nodes gated while a third completes
//	graphsession   Graph: a node's tool interrupts, a second process resumes
//	swarmapproval  Swarm: BeforeNodeCallEvent approval of the cleanup agent
//	subagent       an agent as another's tool (agent.AsTool): the sub agent's
//	               approval surfaces at the top, a second process answers it
//
// Each runs on the scripted model, so it needs no network or API key. Give
// the answer with -answer y (or BRAID_ANSWER=y) to run without a terminal;
// without one it asks at the terminal. -h lists an example's flags; it
// takes no other argument. The exit status is 0 when the example ran (or
// -h was asked), 1 when it failed, 2 for a bad command line (nothing ran).
package examples
