// Package postgres is a persistence.Store on PostgreSQL (SPEC S3), for
// sessions shared by several processes and machines. It passes the same
// conformance suite as the embedded (SQLite) and memory stores. It needs
// PostgreSQL 13 or later; New refuses an older server.
//
// It uses the embedded store's tables: braid_records, one row per owner
// with its version and data, and braid_messages, one row per message, all
// text, so JSON comes back byte for byte. The first New on a database
// creates them (with braid_meta, which holds their layout; durably, so a
// server crash right after New does not lose them), which takes a
// role that may create tables in the schema; once they are there, New
// only reads braid_meta, so an application's role needs no more than
// SELECT, INSERT, UPDATE and DELETE on the three tables. Ids are text
// COLLATE "C", so they order byte by byte. Keep several stores in one
// database apart with the DSN's search_path. As with SQLite, New refuses
// tables of a layout this build does not know (persistence.ErrSchemaVersion)
// and writes nothing to them, and brings tables of an earlier layout to
// this build's, unless opened with Config.Existing (an operator's tool
// that writes to a store that must be there), which creates and changes
// no table. New also refuses a server that takes no writes (a hot
// standby, or default_transaction_read_only on) with ErrServerReadOnly,
// saying which from the settings the server reports to any role
// (in_hot_standby, from PostgreSQL 14, and default_transaction_read_only),
// and a write that later meets one (a primary turned standby) fails with
// that error too, having written nothing. A store opened with
// Config.ReadOnly (an inspection tool's) reads such a server, and creates
// and changes nothing: its writes fail with ErrReadOnly.
//
// A save is one transaction that first takes an advisory lock on its
// session, so that its version checks and writes are one step for every
// process; a stale save changes nothing. The common save (one owner,
// appending) is one round trip: the lock and one statement whose record
// write carries the version check and whose message inserts depend on it,
// sent as one pipeline (an implicit transaction). Anything else (a batch,
// a rewrite, a conflict to explain) takes the general path, a transaction
// at read committed whatever the DSN's default isolation, so a stale save
// is a *persistence.ConflictError, never a serialization failure. A change
// longer than persistence.MaxValueSize in all (its data and messages)
// takes the general path too, whose statements each carry at most that
// much of its data or messages (so at most 256 MiB): PostgreSQL takes at
// most 1 GiB in one protocol message, and in one value, so a save of 1 GiB
// of messages or more, or a rewrite of such a history, is stored whole, in
// one transaction. Saves that are not durable commit
// with synchronous_commit off; a durable save, and Sync, commit with it on,
// waiting for the WAL flush, which makes every earlier commit durable too.
// A save whose connection dies once its commit was sent asks the server,
// on another connection, whether it committed: a general-path save learns
// its transaction's id with the session's lock, and, holding that lock in
// turn (so the transaction has ended), reads its status; committed, the
// save succeeds, rolled back, it runs again. The one-round-trip append
// learns its transaction's id only with its reply: cut off, it fails
// though it may be stored, once (an error matching
// persistence.ErrOutcomeUnknown), and the same save sent again is then
// stale, a *persistence.ConflictError (see persistence.Store). So does a
// general-path save whose question finds no answer (the server cannot be
// reached, or the session's lock stays taken for 5 s), and one whose
// server may have restarted since its transaction began: a crash recovery
// gives out again the ids of transactions whose log had not reached the
// disk, so the store takes the answer only from the same run of the server
// (the time it started and its latest checkpoint, which every crash
// recovery ends with, unchanged; read with pg_control_checkpoint, which
// PUBLIC may run unless an operator revoked it: without it, no question is
// asked).
// A load is one statement, so one snapshot. The tables dropped under an
// open store (or the database dropped and created again) fail its calls
// with an error that says so; the store creates nothing then, and works
// again once a New has created them.
//
// A call whose connection died before anything of it could commit runs
// again on another connection, up to Config.MaxConns times,
// so that after a server restart or an operator's pg_terminate_backend no
// call fails on a connection that was already gone (the pool checks only
// connections idle for a second or more): a read whose connection died; a
// transaction whose connection died before its commit was sent; the
// one-round-trip save when the server's word that it ended the session
// (a FATAL error of SQLSTATE 57P01, 57P05 or 25P03: terminated, shut
// down, timed out) came in place of its first statement's result (the
// lock's; a simple query commits before it reports its last statement
// complete), or its connection died while its statements were prepared. A
// save is never run again once its commit (or its pipeline) was sent and
// the connection then broke without that word: it may have committed. A connection pooler's own FATAL error
// (its link to the server broke, perhaps after the commit) and a PANIC
// (perhaps at the commit) are not that word. A failed connect is not
// tried again. The first connection a call finds closed under it (the
// server ended it, or the network or a proxy cut it; not the call's own
// context ending) drops every other connection of the pool, idle ones at
// once, those in use when their calls end: the pool hands out connections
// idle for less than a second unchecked, so after a quick restart, or a
// proxy that cut every connection, each would fail the save sent on it.
// The save that met the break may fail (its outcome unknown); the calls
// after it connect anew.
//
// A call whose context ends while a statement runs asks the server to
// cancel it and returns once it has failed, with an error that matches
// the context's: a save cancelled while it waits for its session's lock
// does not commit later, and leaves no backend waiting. A server that
// does not answer the cancel is given 5 s more, then the connection is
// closed under the statement. The rollback of a transaction that failed
// (a conflict, say) waits no longer than the call's deadline nor 5 s,
// with the same 5 s for its cancel: a server that stops answering then
// does not keep the call.
//
// Close waits for the calls under way, and for the server to hear that
// the connections end, for Config.ConnectTimeout at most: a server that
// stopped answering (its process stopped, its host hung) does not keep it
// longer. It then closes every connection, and the calls still under way
// fail with persistence.ErrClosed.
package postgres
