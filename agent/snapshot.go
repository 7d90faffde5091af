package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
)

// SnapshotVersion is the schema version of Snapshot records.
const SnapshotVersion = 1

// Snapshot is everything an agent needs to carry on in another runtime or
// process: its history, its key/value state, and its interrupt state with the
// pending tool cycle. It is what a session store persists.
type Snapshot struct {
	Version    int                        `json:"version"`
	AgentID    string                     `json:"agentId"`
	Messages   []model.Message            `json:"messages"`
	State      map[string]json.RawMessage `json:"state"`
	Interrupts *interrupt.State           `json:"interrupts"`
	Pending    *Pending                   `json:"pending,omitempty"`
}

// PendingKind says what an interrupted agent waits to resume.
type PendingKind string

// Pending kinds.
const (
	// PendingTools: a tool cycle; Pending.Message holds its assistant message.
	PendingTools PendingKind = "tools"
	// PendingModel: a model call stopped by a BeforeModelCall interrupt.
	PendingModel PendingKind = "model"
)

// Pending is the unfinished work of an agent: the assistant tool-use message
// being resumed and the results already finished (SPEC A3). It lives beside
// the interrupt state, never in the history. It is saved while a tool cycle
// runs, too (after each tool), so a run cut off by a crash carries on without
// running finished tools again.
type Pending struct {
	Kind      PendingKind        `json:"kind"`
	Message   *model.Message     `json:"assistantMessage,omitempty"`
	Completed []model.ToolResult `json:"completedToolResults"`
}

func (p *Pending) clone() *Pending {
	if p == nil {
		return nil
	}
	c := &Pending{Kind: p.Kind}
	if p.Message != nil {
		m := p.Message.Clone()
		c.Message = &m
	}
	c.Completed = make([]model.ToolResult, len(p.Completed))
	for i, r := range p.Completed {
		c.Completed[i] = r.Clone()
	}
	return c
}

// ErrSnapshot: a snapshot does not fit the agent (another agent's, a newer
// schema, inconsistent contents).
var ErrSnapshot = errors.New("invalid agent snapshot")

// Validate checks a snapshot before an agent restores it.
func (s *Snapshot) Validate(agentID string) error {
	if s.Version != SnapshotVersion {
		return fmt.Errorf("%w: schema version %d, this build reads %d", ErrSnapshot, s.Version, SnapshotVersion)
	}
	if agentID != "" && s.AgentID != agentID {
		return fmt.Errorf("%w: snapshot of agent %q, not %q", ErrSnapshot, s.AgentID, agentID)
	}
	activated := s.Interrupts != nil && s.Interrupts.Activated()
	if activated && s.Pending == nil {
		return fmt.Errorf("%w: interrupt state activated without pending work", ErrSnapshot)
	}
	if s.Pending != nil {
		switch s.Pending.Kind {
		case PendingTools:
			if s.Pending.Message == nil || len(s.Pending.Message.ToolUses()) == 0 {
				return fmt.Errorf("%w: pending tool cycle without tool uses", ErrSnapshot)
			}
		case PendingModel:
		default:
			return fmt.Errorf("%w: unknown pending kind %q", ErrSnapshot, s.Pending.Kind)
		}
	}
	return nil
}

// Session keeps an agent's session across processes (SPEC S1);
// *persistence.SessionManager implements it. The agent loads its record when
// it is created and saves at every save point, from its invocation, one call
// at a time, and does not go on (nor tell anyone about an interrupt) until the
// save returns. A failed save fails the invocation; after a
// persistence.ErrConflict the agent is stale: build a new one.
type Session interface {
	LoadAgent(ctx context.Context, agentID string) (*persistence.AgentRecord, error)
	SaveAgent(ctx context.Context, agentID string, rec *persistence.AgentRecord, point persistence.SavePoint) error
}

// fromRecord turns a stored record into a snapshot.
func fromRecord(agentID string, rec *persistence.AgentRecord) (*Snapshot, error) {
	s := &Snapshot{Version: SnapshotVersion, AgentID: agentID, Messages: rec.Messages, State: rec.State, Interrupts: rec.Interrupts}
	if len(rec.Pending) > 0 {
		var p Pending
		if err := json.Unmarshal(rec.Pending, &p); err != nil {
			return nil, fmt.Errorf("%w: pending work: %v", ErrSnapshot, err)
		}
		s.Pending = &p
	}
	if err := s.Validate(agentID); err != nil {
		return nil, err
	}
	return s, nil
}
