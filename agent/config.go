package agent

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// DefaultID is the id of an agent whose Config leaves ID empty.
const DefaultID = "default"

// Config configures an agent. Model is required; everything else has a default.
type Config struct {
	// ID names the agent within a session (default "default"); snapshots are
	// keyed by it.
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
	// Executor runs the tools of one turn (default tool.Concurrent{}).
	Executor tool.Executor
	// System is the actor system the agent's actor lives in. Nil makes the
	// agent start its own, stopped by Close; share one System between many
	// agents (a server building an agent per request) to save the start-up.
	System *actors.System
	// Messages is the initial history (copied). Ignored when Restore is set.
	Messages []model.Message
	// Restore is a snapshot to carry on from (another runtime or process).
	// It cannot be combined with Session.
	Restore *Snapshot
	// Session, if set, restores the agent when it is created and saves it at
	// every save point (SPEC S1, I9): a persistence.NewSessionManager over a
	// store the application opened once (sqlite.Open, postgres.New) and
	// closes itself. The manager opens nothing, so an agent per request
	// leaks nothing.
	Session Session
	// MaxAutoResumes bounds how often AfterInvocation hooks may call Resume
	// within one Invoke (default 16).
	MaxAutoResumes int
	// MaxModelRetries bounds AfterModelCall retries per model call (default 8).
	MaxModelRetries int
	// MaxToolRetries bounds AfterToolCall retries per tool call (default 8).
	MaxToolRetries int
	// Logger receives the actor system's log lines when the agent starts its
	// own System. Nil is silent.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with the defaults filled in (no model).
func DefaultConfig() Config {
	return Config{ID: DefaultID, Executor: tool.Concurrent{}, MaxAutoResumes: 16, MaxModelRetries: 8, MaxToolRetries: 8}
}

// ErrConfig: the configuration is invalid.
var ErrConfig = errors.New("invalid agent config")

func (c *Config) withDefaults() {
	d := DefaultConfig()
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
}

// Validate checks the configuration (after defaults are applied).
func (c Config) Validate() error {
	c.withDefaults()
	if c.Model == nil {
		return fmt.Errorf("%w: no model", ErrConfig)
	}
	if c.MaxAutoResumes < 0 || c.MaxModelRetries < 0 || c.MaxToolRetries < 0 {
		return fmt.Errorf("%w: negative limit", ErrConfig)
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
