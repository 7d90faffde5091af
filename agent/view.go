package agent

import (
	"slices"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
)

// View is what hooks and tools see of their agent (SPEC R7): its identity
// and the session as the running work has it, read without asking the
// actor, so a callback that reads its own agent never waits on it. Only
// the key/value state can be changed through it (the seed's "trust"
// pattern); the rest is read as copies. A View is valid during the
// callback it was given to.
type View struct{ j *job }

// ID returns the agent id.
func (v *View) ID() string { return v.j.cfg.ID }

// Name returns the display name.
func (v *View) Name() string { return v.j.cfg.Name }

// OwnerPath returns the agent's owner path ("" outside any orchestrator).
func (v *View) OwnerPath() string { return v.j.cfg.OwnerPath }

// State returns the agent's key/value store. Changes are saved with the
// session at the next save point.
func (v *View) State() *State { return v.j.kv }

// Messages returns a copy of the history.
func (v *View) Messages() []model.Message { return model.CloneMessages(v.j.history()) }

// Tools returns the specs of the agent's tools.
func (v *View) Tools() []model.ToolSpec { return slices.Clone(v.j.tools.specs) }

// Interrupts returns the agent's interrupts without an answer yet.
func (v *View) Interrupts() []interrupt.Interrupt { return v.j.interrupts.Unanswered() }

// Answering returns the responses the running invocation answers (empty
// unless it is a resume), as given.
func (v *View) Answering() []interrupt.Response { return slices.Clone(v.j.answering) }

// Snapshot returns the session as the running work has it now.
func (v *View) Snapshot() *Snapshot { return v.j.snapshot() }
