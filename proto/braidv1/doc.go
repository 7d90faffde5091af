// Package braidv1 is the generated Go code of Braid's protocol (package
// braid.v1 in proto/braidv1/*.proto): the messages every owner receives and
// sends (SPEC R2), so that an agent, a node or an orchestrator can be
// addressed from another process. Do not edit the .pb.go files; change the
// .proto files and run `make proto`.
package braidv1
