// Package runclient is what the Graph and Swarm handles share: their
// calls to an orchestrator actor (actors.Orchestrator), with the run's
// input, events and results in their public forms (agent.Input,
// multiagent.Event, multiagent.Result) rather than the protobuf ones.
package runclient
