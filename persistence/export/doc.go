// Package export turns a stored session into person-readable JSON and
// back: Read returns every record of a session (what `braid session
// export` prints), Write puts an exported session into a store as new
// records, all or nothing (`braid session import`), and Check makes
// Write's checks without a store. So a session can be read by people and
// scripts, and moved between stores; every record is checked as the
// session manager would check it on load (SPEC S5), both ways.
package export
