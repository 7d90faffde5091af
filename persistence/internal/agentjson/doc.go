// Package agentjson writes and reads the data of an agent's stored record
// (its state, interrupt state, pending work, usage and the key it was
// saved under) without reflection: Append writes byte for byte what
// encoding/json writes, and Parse reads that form strictly (SPEC S5),
// accepting exactly what the reflective strict decoding accepted. The
// session manager (package persistence) is its only user.
package agentjson
