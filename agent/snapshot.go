package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

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
	// Usage is the model usage of the agent's latest invocation so far,
	// as saved: with a Session, every save stores it with the turns it
	// counts, so that an invocation cut off (by a crash, or a Close) and
	// carried on with the empty Input counts the model calls made before
	// the cut in its Result.Usage, once (SPEC A9). A new invocation (a
	// prompt, a resume) starts it from zero; SetMessages clears it.
	// Without a Session it is not kept up to date (nothing is saved), but
	// a restored one (Config.Restore) is carried on the same way.
	Usage model.Usage `json:"usage,omitzero"`
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
// runs, too (after each tool; the last one's result may be saved in the
// history with the tool-use/result pair instead), so a run cut off by a crash
// carries on without running finished tools again.
type Pending struct {
	Kind      PendingKind        `json:"kind"`
	Message   *model.Message     `json:"assistantMessage,omitempty"`
	Completed []model.ToolResult `json:"completedToolResults"`
	// Started are the at-most-once tools of the cycle that started and
	// have no result yet (SPEC S6): one found on loading was cut off by a
	// crash, and is not run again without an answer.
	Started []ToolStart `json:"startedTools,omitempty"`
	// Cycle identifies a tool cycle (a random id, made when it begins),
	// the same every time it is carried on: a tool run again in it can
	// tell its own earlier work from that of a call of another cycle with
	// the same tool-use id (agent.AsTool does). Empty in a cycle stored
	// before cycles had ids.
	Cycle string `json:"cycleId,omitempty"`
}

// ToolStart marks the start of an at-most-once tool.
type ToolStart struct {
	ToolUseID string    `json:"toolUseId"`
	StartedAt time.Time `json:"startedAt"`
}

func (p *Pending) clone() *Pending {
	if p == nil {
		return nil
	}
	c := &Pending{Kind: p.Kind, Cycle: p.Cycle}
	if p.Message != nil {
		m := p.Message.Clone()
		c.Message = &m
	}
	c.Completed = make([]model.ToolResult, len(p.Completed))
	for i, r := range p.Completed {
		c.Completed[i] = r.Clone()
	}
	c.Started = slices.Clone(p.Started)
	return c
}

// ErrSnapshot reports that a snapshot does not fit the agent (another
// agent's, a newer schema, inconsistent contents).
var ErrSnapshot = errors.New("invalid agent snapshot")

// Validate checks a snapshot before an agent restores it: its schema
// version, its agent id (unless agentID is empty), that each message is
// one Config.Messages would take (model.Message.Validate), that tool
// results answer the tool uses before them, and that the interrupt state
// and the pending work fit together.
func (s *Snapshot) Validate(agentID string) error {
	for i, m := range s.Messages {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("%w: message %d: %v", ErrSnapshot, i, err)
		}
	}
	return s.validate(agentID)
}

// validate is Validate without the check of each message, which a
// session's load has made already (persistence.AgentSession).
func (s *Snapshot) validate(agentID string) error {
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
	if err := validateHistory(s.Messages); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if s.Pending != nil {
		if err := s.Pending.validate(); err != nil {
			return fmt.Errorf("%w: pending work: %v", ErrSnapshot, err)
		}
	}
	return nil
}

// validate checks that pending work fits together: a tool cycle's message
// is a valid assistant message with tool uses, and its finished results and
// start marks are of those tool uses, once each.
func (p *Pending) validate() error {
	switch p.Kind {
	case PendingModel:
		if p.Message != nil || len(p.Completed) > 0 || len(p.Started) > 0 {
			return errors.New("a pending model call carries no tool cycle")
		}
		return nil
	case PendingTools:
	default:
		return fmt.Errorf("unknown kind %q", p.Kind)
	}
	if p.Message == nil || len(p.Message.ToolUses()) == 0 {
		return errors.New("tool cycle without tool uses")
	}
	if p.Message.Role != model.RoleAssistant {
		return fmt.Errorf("tool cycle message of role %q", p.Message.Role)
	}
	if err := p.Message.Validate(); err != nil {
		return err
	}
	// A model may give several tool uses one id: each may have a result
	// or a start mark, so an id may have as many as it has uses.
	uses := map[string]int{}
	for _, u := range p.Message.ToolUses() {
		uses[u.ToolUseID]++
	}
	seen := map[string]int{}
	for _, r := range p.Completed {
		if err := r.Validate(); err != nil {
			return err
		}
		if seen[r.ToolUseID] >= uses[r.ToolUseID] {
			return fmt.Errorf("finished result %q is not one of the cycle's tool uses, or is there more often than its uses", r.ToolUseID)
		}
		seen[r.ToolUseID]++
	}
	for _, st := range p.Started {
		if seen[st.ToolUseID] >= uses[st.ToolUseID] {
			return fmt.Errorf("started tool %q is not an unfinished tool use of the cycle", st.ToolUseID)
		}
		seen[st.ToolUseID]++
	}
	return nil
}

// validateHistory checks the pairing of SPEC A3: every message of tool
// results answers the tool uses of the assistant message before it, each
// once, in order.
func validateHistory(msgs []model.Message) error {
	for i, m := range msgs {
		rs := m.ToolResults()
		if len(rs) == 0 {
			continue
		}
		var uses []model.ToolUse
		if i > 0 && msgs[i-1].Role == model.RoleAssistant {
			uses = msgs[i-1].ToolUses()
		}
		if len(uses) != len(rs) {
			return fmt.Errorf("message %d: %d tool results for %d tool uses", i, len(rs), len(uses))
		}
		for k := range rs {
			if rs[k].ToolUseID != uses[k].ToolUseID {
				return fmt.Errorf("message %d: result %q answers no tool use (want %q)", i, rs[k].ToolUseID, uses[k].ToolUseID)
			}
		}
	}
	return nil
}

// Session opens an agent's writer in a session (SPEC S1);
// *persistence.SessionManager implements it. The agent opens its record once,
// when it is created, and saves through the writer at every save point, one
// save at a time, and does not go on (nor tell anyone about an interrupt)
// until the save returns. A failed save fails the invocation; after a
// persistence.ErrConflict (another writer changed the record) the agent
// opens its record again, and its next work starts from the newer one.
// An input refused for the agent's interrupt state saves nothing, so the
// agent opens its record then too: if another writer saved since, the
// refusal becomes that *persistence.ConflictError, and the agent goes on
// from the newer record.
// A save that the store committed but could not report (a server's
// connection lost after the commit, see persistence.Store.Save) fails
// the invocation too; the agent's next save then conflicts the same way
// and the agent goes on from the stored record, which holds that save
// once.
type Session interface {
	SessionID() string
	OpenAgent(ctx context.Context, agentID string) (*persistence.AgentSession, *persistence.AgentRecord, error)
}

// fromRecord turns a stored record into a snapshot. Stored work that does not
// decode exactly, or does not fit together, is a *persistence.DamageError
// naming the record (SPEC S5); it also matches ErrSnapshot.
func fromRecord(key persistence.Key, rec *persistence.AgentRecord) (*Snapshot, error) {
	s := &Snapshot{Version: SnapshotVersion, AgentID: key.ID, Messages: rec.Messages, State: rec.State, Interrupts: rec.Interrupts, Usage: rec.Usage}
	if len(rec.Pending) > 0 {
		p, err := parsePending(rec.Pending)
		if err != nil {
			return nil, &persistence.DamageError{Key: key, Part: "pending work", Err: fmt.Errorf("%w: %v", ErrSnapshot, err)}
		}
		s.Pending = p
	}
	if err := s.validate(key.ID); err != nil { // the load checked each message
		return nil, &persistence.DamageError{Key: key, Part: "record", Err: err}
	}
	return s, nil
}
