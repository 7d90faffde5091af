package swarm

import (
	"errors"
	"fmt"
	"time"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
)

// DefaultID is the id of a swarm whose Config leaves ID empty.
const DefaultID = "default_swarm"

// Kind is the orchestrator kind of swarms (identity and record type).
const Kind = "swarm"

// Defaults of the limits a zero Config field takes.
const (
	DefaultMaxHandoffs      = 20
	DefaultMaxIterations    = 20
	DefaultExecutionTimeout = 900 * time.Second
	DefaultNodeTimeout      = 300 * time.Second
)

// ErrBuild reports that the swarm cannot be built, from its nodes or its
// Config (the message says what is wrong).
var ErrBuild = errors.New("invalid swarm")

// Config configures a swarm. Zero limits take their defaults; there is no
// unlimited setting, as agents that hand off to each other need a bound.
type Config struct {
	// ID names the swarm in its session (default DefaultID); it holds no
	// "/" or ":" (ErrBuild), being a segment of its nodes' owner paths.
	ID string
	// Hooks register callbacks on the multiagent events (package
	// multiagent): BeforeNodeCall may interrupt or cancel a node.
	Hooks []hook.Provider
	// Session saves the run (SPEC M10); nil keeps it in memory.
	Session *persistence.SessionManager
	// System is the actor system (nil: actors.Default()).
	System *actors.System
	// The limits below are Strands': unlike graph.Config's, where 0 is no
	// limit, 0 here is the default, and a swarm always has these limits
	// (for practically none, give a large value).
	//
	// MaxHandoffs ends the run FAILED ("Max handoffs reached: N") when an
	// agent hands off after N handoffs were made (default 20).
	MaxHandoffs int
	// MaxIterations ends the run FAILED ("Max iterations reached: N") when
	// a handoff would start a node run after N were started (default 20).
	// A resumed run is the same iteration as the run it resumes.
	MaxIterations int
	// ExecutionTimeout ends the run FAILED ("Execution timed out: Xs")
	// once it has executed that long, checked before each node run starts
	// (default 900s). The time is summed over the run's invocations; the
	// time an interrupted run waits for its answers is not counted. A
	// node run that stopped for interrupts and is resumed is not a new
	// one: it finishes, even past the budget. NodeTimeout fails a node
	// run that takes longer (default 300s).
	ExecutionTimeout, NodeTimeout time.Duration
	// RepetitiveHandoffDetectionWindow and RepetitiveHandoffMinUniqueAgents
	// end the run FAILED ("Repetitive handoff: U unique nodes out of W
	// recent iterations") when, at a handoff, the last W completed node
	// runs were made by fewer than U distinct agents. 0 (the default)
	// turns the check off; both must be set together, U <= W.
	RepetitiveHandoffDetectionWindow int
	RepetitiveHandoffMinUniqueAgents int
	// IdleTimeout passivates the swarm (and its agents) when idle;
	// requires a Session.
	IdleTimeout time.Duration
}

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	return Config{ID: DefaultID, MaxHandoffs: DefaultMaxHandoffs, MaxIterations: DefaultMaxIterations,
		ExecutionTimeout: DefaultExecutionTimeout, NodeTimeout: DefaultNodeTimeout}
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.ID == "" {
		c.ID = d.ID
	}
	if c.MaxHandoffs == 0 {
		c.MaxHandoffs = d.MaxHandoffs
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = d.MaxIterations
	}
	if c.ExecutionTimeout == 0 {
		c.ExecutionTimeout = d.ExecutionTimeout
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = d.NodeTimeout
	}
	return c
}

// Validate checks the configuration, zero fields taken as their defaults.
// Errors match ErrBuild.
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, l := range []struct {
		name  string
		value int64
	}{
		{"MaxHandoffs", int64(c.MaxHandoffs)}, {"MaxIterations", int64(c.MaxIterations)},
		{"ExecutionTimeout", int64(c.ExecutionTimeout)}, {"NodeTimeout", int64(c.NodeTimeout)},
		{"IdleTimeout", int64(c.IdleTimeout)},
		{"RepetitiveHandoffDetectionWindow", int64(c.RepetitiveHandoffDetectionWindow)},
		{"RepetitiveHandoffMinUniqueAgents", int64(c.RepetitiveHandoffMinUniqueAgents)},
	} {
		if l.value < 0 {
			return fmt.Errorf("%w: negative limit: %s", ErrBuild, l.name)
		}
	}
	switch {
	case multiagent.CheckSegment("swarm", c.ID) != nil: // with a session or without
		return fmt.Errorf("%w: %w", ErrBuild, multiagent.CheckSegment("swarm", c.ID))
	case c.IdleTimeout > 0 && c.Session == nil:
		return fmt.Errorf("%w: IdleTimeout needs a Session (a passivated swarm comes back from its session)", ErrBuild)
	case hook.Missing(c.Hooks) >= 0:
		return fmt.Errorf("%w: Hooks[%d] is nil (a hook left out would leave what it guards unguarded)", ErrBuild, hook.Missing(c.Hooks))
	case (c.RepetitiveHandoffDetectionWindow > 0) != (c.RepetitiveHandoffMinUniqueAgents > 0):
		return fmt.Errorf("%w: set RepetitiveHandoffDetectionWindow and RepetitiveHandoffMinUniqueAgents together", ErrBuild)
	case c.RepetitiveHandoffMinUniqueAgents > c.RepetitiveHandoffDetectionWindow:
		return fmt.Errorf("%w: RepetitiveHandoffMinUniqueAgents (%d) exceeds RepetitiveHandoffDetectionWindow (%d): every run would fail",
			ErrBuild, c.RepetitiveHandoffMinUniqueAgents, c.RepetitiveHandoffDetectionWindow)
	}
	return nil
}
