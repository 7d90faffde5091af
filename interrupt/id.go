package interrupt

import "github.com/google/uuid"

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
