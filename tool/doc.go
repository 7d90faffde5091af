// Package tool turns Go functions into tools a model can call, gives each
// call a Context through which the tool can raise interrupts, and provides
// the executors that run the tools of one model turn: Concurrent (the
// default) and Sequential. A tool declared Exclusive never runs two calls
// with its key at once, under either executor.
//
// A tool built with New takes a typed input struct; its JSON schema is
// derived from the struct with github.com/google/jsonschema-go, so field
// tags `json:"paths" jsonschema:"files to delete"` name and describe the
// parameters. A field without omitempty (or omitzero) is a required
// parameter, and the schema names no other: a call whose input the schema
// refuses fails with ErrBadInput before the function runs, so the model
// gets an error result instead of the tool running with zero values.
package tool
