// Package memory is the in-memory persistence.Store: every store's
// conformance suite (persistencetest.Run) runs against it, and tests use
// it where what a test checks is not the database. It makes the checks
// every store makes (ids, versions, schema, damage) and keeps nothing
// past the process.
package memory
