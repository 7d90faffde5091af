// Package proto holds Braid's .proto files and, beside each, the generated
// Go code (committed, so builds need no protoc). Regenerate with `make proto`.
// Nothing here is edited by hand except the .proto files.
package proto
