// Package sqlite is the embedded persistence.Store (SPEC S2): one SQLite
// database, braid.db, in a folder of its own, on modernc.org/sqlite (pure
// Go, no cgo). It passes the conformance suite in package persistencetest.
//
// Records and messages are JSON text in two tables, braid_records (one row
// per owner: versions and data) and braid_messages (one row per message),
// so any SQLite client can read them. Appending a message inserts one row;
// a rewrite deletes the rows from the first changed message on.
//
// The database is in WAL mode. Every save is queued for the Store's one
// write connection; the caller that finds the connection free takes it
// and commits every save queued at that moment in one BEGIN IMMEDIATE
// transaction (group commit); if one of them fails (a stale save), the
// group is done again with a savepoint per save, so that one is rolled back
// alone and the others commit; the callers whose saves
// it took wait for its reply. A lone save is committed by its own caller,
// with no hand-off between goroutines. A group commits with synchronous=NORMAL (atomic, survives
// the process being killed) unless one of its saves is durable, when it
// commits with synchronous=FULL: an fsync of the WAL, which makes every
// earlier commit durable too. Sync commits a small write the same way.
// Loads read from a pool of their own, concurrently with the writes.
//
// Several Stores, in one process or several, may share a folder: each
// transaction takes SQLite's write lock (waiting up to Config.BusyTimeout,
// then failing with ErrBusy) and checks the versions it writes over inside
// it. Keep one Store per process and folder, so that its saves are grouped,
// and Close it on shutdown.
package sqlite
