package agent

import "time"

// SetClock makes now the clock of a's at-most-once start marks. Call it
// before the agent's first invocation.
func SetClock(a *Agent, now func() time.Time) { a.core.now = now }
