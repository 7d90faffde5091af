package interrupt

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// The deterministic ids of SPEC I2, in Strands Python's v1 forms. Ids are
// opaque to callers: pass them back, never parse them.

// NameUUID is u(x) of SPEC I2: the UUIDv5 of x in the OID namespace, lower case.
func NameUUID(x string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(x)).String()
}

// BeforeToolCallID is the id of an interrupt raised on BeforeToolCallEvent.
func BeforeToolCallID(toolUseID, name string) string {
	return "v1:before_tool_call:" + toolUseID + ":" + NameUUID(name)
}

// BeforeToolsID is the id of an interrupt raised on BeforeToolsEvent. It does
// not depend on the batch: the owner clears its state after every finished
// tool cycle, so a later cycle raises a fresh interrupt.
func BeforeToolsID(name string) string {
	return "v1:before_tools:" + NameUUID(name)
}

// BeforeModelCallID is the id of an interrupt raised on BeforeModelCallEvent
// (a Braid extension of the Strands set).
func BeforeModelCallID(name string) string {
	return "v1:before_model_call:" + NameUUID(name)
}

// ToolCallID is the id of an interrupt raised from a tool's context.
func ToolCallID(toolUseID, name string) string {
	return "v1:tool_call:" + toolUseID + ":" + NameUUID(name)
}

// BeforeNodeCallID is the id of an interrupt raised on BeforeNodeCallEvent.
func BeforeNodeCallID(nodeID, name string) string {
	return "v1:before_node_call:" + NameUUID(nodeID) + ":" + NameUUID(name)
}

// ErrOwnerPath reports that an owner path is not a "/"-separated list of
// non-empty segments free of ":" and "/".
var ErrOwnerPath = errors.New(`invalid owner path: segments must be non-empty and contain neither "/" nor ":"`)

// ValidateOwnerPath checks an owner path (SPEC I2) such as "graph/node".
// The empty path, an owner outside any orchestrator, is valid.
func ValidateOwnerPath(path string) error {
	if path == "" {
		return nil
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || strings.ContainsAny(seg, ":") || !utf8.ValidString(seg) {
			return fmt.Errorf("%w: %q", ErrOwnerPath, path)
		}
	}
	return nil
}

// OwnedID is the id of an interrupt raised by the owner at path (SPEC I2):
// "path/id", so that equal ids of two owners do not collide and the id
// names its owner. The empty path gives id unchanged, the v1 forms.
func OwnedID(path, id string) string {
	if path == "" {
		return id
	}
	return path + "/" + id
}

// SplitOwner returns the owner path and the owner's own id of an id made
// by OwnedID. Path segments hold no ":", and an owner's id starts with a
// segment holding one, so the split is the last "/" before the first ":".
func SplitOwner(id string) (path, own string) {
	colon := strings.IndexByte(id, ':')
	if colon < 0 {
		colon = len(id)
	}
	slash := strings.LastIndexByte(id[:colon], '/')
	if slash < 0 {
		return "", id
	}
	return id[:slash], id[slash+1:]
}
