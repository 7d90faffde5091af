// Package model holds the conversation types (messages and content blocks in
// the Strands / Bedrock Converse JSON shapes), the streaming Model interface
// that providers implement, and Scripted, a deterministic offline model for
// tests, examples and the demo.
//
// A Model streams one assistant turn as StreamEvents; Accumulator folds them
// into the final Message. Providers with heavy dependencies live in their own
// sub-packages so that this package, and the agent loop, build without them.
package model
