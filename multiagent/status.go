package multiagent

import "github.com/braidhq/braid/proto/braidv1"

// Status is the status of a run or of one node (SPEC M2).
type Status string

// Statuses.
const (
	StatusPending     Status = "PENDING"
	StatusExecuting   Status = "EXECUTING"
	StatusCompleted   Status = "COMPLETED"
	StatusFailed      Status = "FAILED"
	StatusCancelled   Status = "CANCELLED"
	StatusInterrupted Status = "INTERRUPTED"
)

// StatusFromWire converts the protobuf status.
func StatusFromWire(s braidv1.NodeStatus) Status {
	switch s {
	case braidv1.NodeStatus_NODE_STATUS_EXECUTING:
		return StatusExecuting
	case braidv1.NodeStatus_NODE_STATUS_COMPLETED:
		return StatusCompleted
	case braidv1.NodeStatus_NODE_STATUS_FAILED:
		return StatusFailed
	case braidv1.NodeStatus_NODE_STATUS_CANCELLED:
		return StatusCancelled
	case braidv1.NodeStatus_NODE_STATUS_INTERRUPTED:
		return StatusInterrupted
	}
	return StatusPending
}

// ToWire converts the status to its protobuf form.
func (s Status) ToWire() braidv1.NodeStatus {
	switch s {
	case StatusExecuting:
		return braidv1.NodeStatus_NODE_STATUS_EXECUTING
	case StatusCompleted:
		return braidv1.NodeStatus_NODE_STATUS_COMPLETED
	case StatusFailed:
		return braidv1.NodeStatus_NODE_STATUS_FAILED
	case StatusCancelled:
		return braidv1.NodeStatus_NODE_STATUS_CANCELLED
	case StatusInterrupted:
		return braidv1.NodeStatus_NODE_STATUS_INTERRUPTED
	}
	return braidv1.NodeStatus_NODE_STATUS_PENDING
}
