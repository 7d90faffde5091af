package agent

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

// DefaultID is the id of an agent whose Config leaves ID empty.
const DefaultID = "default"

// Config configures an agent. Model is required; everything else has a default.
type Config struct {
	// ID names the agent within a session (default "default"); snapshots are
	// keyed by it. It is a record id (SPEC S2: valid UTF-8, 1–255 bytes, no
	// control characters, "/" or "\"), with or without a session.
	ID string
	// Name is a display name (default: ID).
	Name string
	// Model answers the conversation. Required.
	Model model.Model
	// SystemPrompt is sent with every model call.
	SystemPrompt string
	// Tools the model may call. Names must be unique.
	Tools []tool.Tool
	// Hooks register callbacks on the agent's events.
	Hooks []hook.Provider
	// Executor runs the tools of one turn (default tool.Concurrent{}). One
	// that breaks the task contract (tool.Task) fails the invocation with
	// tool.ErrExecutor.
	Executor tool.Executor
	// System is the actor system the agent's actor lives in, and whose
	// registry knows its identity. Nil is actors.Default(), the process's
	// shared System.
	System *actors.System
	// OwnerPath places the agent inside an orchestrator (SPEC I2), for
	// example "graph/node": the ids of its interrupts carry it
	// ("graph/node/v1:tool_call:..."), as do its identity and its tools'
	// idempotency keys and its session record (id "graph:node:<ID>", so
	// with an owner path ID must not hold ":"). Empty outside any
	// orchestrator: ids are exactly Strands Python's v1 forms.
	OwnerPath string
	// IdleTimeout passivates the agent's actor (SPEC R4) after this long
	// without a message while it runs nothing: its memory is freed, its
	// state stays in the session, and the next call activates it again
	// from the store, mid-interrupt included. Zero (the default) keeps it
	// live until Close. Requires a Session.
	IdleTimeout time.Duration
	// LoadTimeout bounds the load of the session when the actor activates
	// (default 30s).
	LoadTimeout time.Duration
	// Messages is the initial history (copied). Ignored when Restore is
	// set, and when Session already holds this agent (the stored history
	// wins): it seeds a new agent only.
	// One that ends with a user message waits for the model's answer: the
	// agent is Incomplete, and its first Invoke takes the empty Input.
	Messages []model.Message
	// Restore is a snapshot to carry on from (another runtime or process).
	// It must be a snapshot of an agent with this ID that Snapshot.Validate
	// accepts (else New fails with ErrSnapshot), and it cannot be combined
	// with Session.
	Restore *Snapshot
	// Session, if set, restores the agent when it is created and saves it at
	// every save point (SPEC S1, I9): a persistence.NewSessionManager over a
	// store the application opened once (sqlite.Open, postgres.New) and
	// closes itself. The manager opens nothing, so an agent per request
	// leaks nothing. Work whose save loses to another writer of the
	// session (persistence.ErrConflict, SPEC S4) fails with it, and the
	// agent loads the stored session again: the next work starts there.
	// So does an input refused for the agent's interrupt state
	// (interrupt.ErrNotInterrupted, ErrUnknownID, ErrResumeRequired) when
	// the stored session changed since the agent read it: it fails with
	// persistence.ErrConflict instead, and the next call is judged on the
	// stored session.
	// A nil *persistence.SessionManager is no session.
	Session Session
	// MaxAutoResumes bounds how often AfterInvocation hooks may call Resume
	// within one Invoke (default 16).
	MaxAutoResumes int
	// MaxModelRetries bounds AfterModelCall retries per model call (default 8).
	MaxModelRetries int
	// MaxToolRetries bounds AfterToolCall retries per tool call (default 8).
	MaxToolRetries int
}

// DefaultConfig returns a Config with the defaults filled in (no model).
func DefaultConfig() Config {
	return Config{ID: DefaultID, Executor: tool.Concurrent{}, MaxAutoResumes: 16, MaxModelRetries: 8, MaxToolRetries: 8, LoadTimeout: 30 * time.Second}
}

// ErrConfig reports that the configuration is invalid.
var ErrConfig = errors.New("invalid agent config")

func (c *Config) withDefaults() {
	d := DefaultConfig()
	if sm, ok := c.Session.(*persistence.SessionManager); ok && sm == nil {
		c.Session = nil // no session, as in graph.Config and swarm.Config
	}
	if c.ID == "" {
		c.ID = d.ID
	}
	if c.Name == "" {
		c.Name = c.ID
	}
	if c.Executor == nil {
		c.Executor = d.Executor
	}
	if c.MaxAutoResumes == 0 {
		c.MaxAutoResumes = d.MaxAutoResumes
	}
	if c.MaxModelRetries == 0 {
		c.MaxModelRetries = d.MaxModelRetries
	}
	if c.MaxToolRetries == 0 {
		c.MaxToolRetries = d.MaxToolRetries
	}
	if c.LoadTimeout == 0 {
		c.LoadTimeout = d.LoadTimeout
	}
}

// Validate checks the configuration (after defaults are applied).
func (c Config) Validate() error {
	c.withDefaults()
	if c.Model == nil {
		return fmt.Errorf("%w: no model: set Config.Model (model.Scripted for a fixed script, or a provider's model: openai.New, anthropic.New, bedrock.New)", ErrConfig)
	}
	for _, l := range []struct {
		name  string
		value int64
	}{
		{"MaxAutoResumes", int64(c.MaxAutoResumes)}, {"MaxModelRetries", int64(c.MaxModelRetries)},
		{"MaxToolRetries", int64(c.MaxToolRetries)}, {"IdleTimeout", int64(c.IdleTimeout)},
		{"LoadTimeout", int64(c.LoadTimeout)},
	} {
		if l.value < 0 {
			return fmt.Errorf("%w: negative limit: %s", ErrConfig, l.name)
		}
	}
	if c.IdleTimeout > 0 && c.Session == nil {
		return fmt.Errorf("%w: IdleTimeout needs a Session (a passivated agent comes back from its session)", ErrConfig)
	}
	if i := hook.Missing(c.Hooks); i >= 0 {
		return fmt.Errorf("%w: Hooks[%d] is nil (a hook left out would leave what it guards unguarded)", ErrConfig, i)
	}
	if c.ID != "" {
		// Checked with or without a session: an agent's id is the id of
		// its session record once it has one (SPEC S2).
		if err := persistence.ValidateID("agent", c.ID); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if c.OwnerPath != "" && strings.Contains(c.ID, ":") {
		return fmt.Errorf("%w: the id %q of an agent with an owner path holds \":\" (its session record id joins path and id with \":\")", ErrConfig, c.ID)
	}
	if err := interrupt.ValidateOwnerPath(c.OwnerPath); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}

	seen := make(map[string]bool, len(c.Tools))
	for i, t := range c.Tools {
		if t == nil {
			return fmt.Errorf("%w: tool %d is nil", ErrConfig, i)
		}
		if v, ok := t.(tool.Validator); ok {
			if err := v.Validate(); err != nil {
				return fmt.Errorf("%w: %v", ErrConfig, err)
			}
		} else if err := tool.ValidateSpec(t.Spec()); err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
		name := t.Spec().Name
		if seen[name] {
			return fmt.Errorf("%w: two tools named %q", ErrConfig, name)
		}
		seen[name] = true
	}
	for i, m := range c.Messages {
		// A history a session could not load back (SPEC S5), as
		// SetMessages refuses it.
		if err := m.Validate(); err != nil {
			return fmt.Errorf("%w: Messages: message %d: %v", ErrConfig, i, err)
		}
	}
	if err := validateHistory(c.Messages); err != nil {
		return fmt.Errorf("%w: Messages: %v", ErrConfig, err)
	}
	if c.Restore != nil && c.Session != nil {
		return fmt.Errorf("%w: Restore and Session exclude each other (the session restores the agent)", ErrConfig)
	}
	if c.Restore != nil {
		if err := c.Restore.Validate(c.ID); err != nil {
			return err
		}
	}
	return nil
}
