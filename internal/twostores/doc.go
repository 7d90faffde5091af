// Package twostores gives tests the stores of two runtimes that share one
// session, as two processes would: two handles on one SQLite folder, or
// one memory store both use.
//
// It is for tests only: it fails the test it is given on any error.
package twostores
