// Package persistence keeps sessions: an agent's (or orchestrator's) state,
// interrupt state and messages, so that a run interrupted in one process can
// be answered and finished in another (SPEC S1–S5).
//
// A Store keeps Records by (session id, kind, id) with optimistic versions:
// every save names the version it was based on, and a stale save fails with
// ErrConflict and changes nothing. Stores:
//
//   - NewMemoryStore, for tests;
//   - NewFileStore, the embedded default: a folder per session of
//     person-readable JSON, written atomically at durable saves, with a
//     journal file per owner for the saves in between, and a redo log that
//     makes a durable save durable with one fdatasync (keep one FileStore
//     per process and folder, shared by the requests' session managers,
//     and Close it on shutdown);
//   - package persistence/postgres, for several processes and machines.
//
// Every store passes the conformance suite in package persistencetest.
//
// A SessionManager binds a store to one session id and speaks in
// AgentRecords; agent.Config.Session takes one. It restores an agent when the
// agent is created and saves at every save point the agent reports.
package persistence
