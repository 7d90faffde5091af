// Package persistence keeps sessions: an agent's (or orchestrator's) state,
// interrupt state and messages, so that a run interrupted in one process can
// be answered and finished in another (SPEC S1–S6).
//
// A Store keeps Records by (session id, kind, id) with optimistic versions:
// every change names the version it was based on, and a stale save fails
// with a *ConflictError and changes nothing. A record's history is kept one
// message per row, so a save carries only the new messages and the new
// state (Change.From), and one Save may commit several owners of one
// session in one transaction. Stores:
//
//   - package persistence/memory, for tests;
//   - package persistence/sqlite, the embedded default: one braid.db per
//     folder, shared by the processes of one machine;
//   - package persistence/postgres, for several processes and machines.
//
// Every store passes the conformance suite in package persistencetest.
// Open a store once per process and close it on shutdown: everything built
// on it (session managers, agents) opens nothing of its own.
//
// A SessionManager binds a store to one session id. Each OpenAgent (or
// Open) returns a writer of its own that knows the version it loaded, so
// two writers on one manager (two processes' agents, say) resuming one
// interrupt cannot both proceed: exactly one does, the other gets
// ErrConflict. (In one actors.System a second agent of the same session and
// id is refused sooner, with actors.ErrBound: one live owner per identity.)
// agent.Config.Session takes a manager.
//
// A store on a server may not learn whether a save it sent committed (the
// connection broke before the reply came): the save fails with an error
// matching ErrOutcomeUnknown, and it is stored once or not at all. A
// direct user of a Store loads before saving again. A writer of a
// SessionManager keeps the version it had, so if the save was stored its
// next save fails with ErrConflict and the owner (an agent, an
// orchestrator) loads the stored record and goes on from it, as after any
// conflict (a resume's claim stored so is another writer's to it: the same
// answers sent again are refused, and the empty input carries the claimed
// run on); if it was not, the next save is based on the right version.
//
// Package persistence/export turns a session into person-readable JSON and back
// (`braid session export` and `import`), so a session can move between
// stores; Store.DeleteSession removes one (`braid session delete`),
// damaged records included. Sessions are kept until deleted.
package persistence
