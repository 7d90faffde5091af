// Package runorder holds the rule that picks a multi-agent run's answer,
// shared by the public result (multiagent.Result.Text) and the protobuf
// one a Graph reads a nested run's text from.
package runorder

// LastCompleted returns the result of the last node that completed: the
// last node of order (the order runs ended) whose result is completed, so
// that a node run again (a swarm's a → b → a, a graph's back edge) gives
// its last answer; without an order, the last completed one of results.
// ok is false when no node completed.
func LastCompleted[T any](order []string, results []T, id func(T) string, completed func(T) bool) (last T, ok bool) {
	if len(order) > 0 {
		byID := make(map[string]T, len(results))
		for _, r := range results {
			byID[id(r)] = r
		}
		for i := len(order) - 1; i >= 0; i-- {
			if r, found := byID[order[i]]; found && completed(r) {
				return r, true
			}
		}
	}
	for i := len(results) - 1; i >= 0; i-- {
		if completed(results[i]) {
			return results[i], true
		}
	}
	return last, false
}
