// Package sqlite is the embedded persistence.Store (SPEC S2): one SQLite
// database, braid.db, in a folder of its own, on modernc.org/sqlite (pure
// Go, no cgo). It passes the conformance suite in package persistencetest.
//
// Records and messages are JSON text in two tables, braid_records (one row
// per owner: versions and data) and braid_messages (one row per message),
// so any SQLite client can read them. Appending a message inserts one row;
// a rewrite deletes the rows from the first changed message on. The
// tables' layout has a version (the braid_meta row "layout"): Open refuses
// a database of a layout it does not know, such as a newer Braid's, with
// an error matching persistence.ErrSchemaVersion, and writes nothing to it;
// it brings one of an earlier layout to this build's. A braid.db that holds
// tables but none of Braid's (another program's database) is refused with
// ErrForeign and left as it was.
//
// The database is in WAL mode. Every save is queued for the Store's one
// write connection; the caller that finds the connection free takes it
// and commits every save queued at that moment in one BEGIN IMMEDIATE
// transaction (group commit); if one of them fails (a stale save), the
// group is done again with a savepoint per save, so that one is rolled back
// alone and the others commit; the callers whose saves it took wait for
// its reply. A caller whose context ends gets the context's error while
// its save's group has not begun its transaction (the save is then not
// run), and the save's outcome once it has. A lone save is committed by its own caller, with no hand-off
// between goroutines. Every transaction commits with synchronous=NORMAL:
// atomic, and it survives the process being killed. A durable save then
// waits for an fsync of the WAL file that began after its commit, which
// makes every earlier commit durable too; the committing caller gives the
// write connection back before it syncs, so the next group commits while
// the WAL syncs, and one fsync serves every durable save committed before
// it began. Sync is such an fsync, also of the commits of other Stores
// and processes on the folder (PRAGMA data_version tells them), and of a
// WAL found holding frames at Open (a writer killed before its durable
// point may have left them unsynced). A failed fsync fails every later
// durable save and Sync with ErrDurability (reopen the store). Loads run
// on the write connection when no caller commits (its page cache holds
// what the saves wrote), else on a pool of their own, concurrently with
// the writes.
//
// Several Stores, in one process or several, may share a folder: each
// transaction takes SQLite's write lock (waiting up to Config.BusyTimeout,
// then failing with ErrBusy) and checks the versions it writes over inside
// it. Keep one Store per process and folder, so that its saves are grouped,
// and Close it on shutdown.
//
// Config.ReadOnly opens an existing store for inspection (braid session
// list, show, export): SQLite's mode=ro, no write connection, nothing
// created, migrated or locked for writing; writes fail with ErrReadOnly.
// SQLite reads a WAL database through its -wal and -shm files, which it
// creates (and leaves, empty) when they are missing and the folder is
// writable. In a folder it may not write, it reads the database when they
// exist (a writer is running, or was killed), or, when no -wal is left (the
// last writer closed cleanly, so braid.db holds every commit), reads
// braid.db as immutable: without locks, so a writer that starts meanwhile
// in that folder (another user's) is not seen.
package sqlite
