// Package actors wraps the Proto.Actor runtime for Braid: an actor System
// that logs through the caller's slog.Logger (silent by default) instead of
// stdout; the Registry that maps owner identities (session, kind, owner
// path) to live actors, activating them on the first message and
// passivating them when idle (SPEC R4); Inboxes that let Go callers wait for
// replies with a context (SPEC R5); the ErrorCodec that carries errors over
// protobuf; and the protobuf conversions Braid's actors share. Cluster
// support lives here too as it is added, so the rest of Braid never touches
// Proto.Actor's cluster API or holds a PID.
package actors
