package runorder_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/braidhq/braid/internal/runorder"
)

type res struct {
	id   string
	done bool
}

func pick(order []string, rs ...res) string {
	r, ok := runorder.LastCompleted(order, rs, func(r res) string { return r.id }, func(r res) bool { return r.done })
	if !ok {
		return "-"
	}
	return r.id
}

// SPEC M11: a run's answer is its last completed node's, in the order runs
// ended: a node run again gives its last answer, and a node that did not
// complete is passed over.
func TestLastCompleted_IsTheLastNodeToCompleteInExecutionOrder(t *testing.T) {
	// a swarm a → b → a: results are listed by first end (a, b), the order says a ended last
	assert.Equal(t, "a", pick([]string{"a", "b", "a"}, res{"a", true}, res{"b", true}))
	assert.Equal(t, "a", pick([]string{"a", "b"}, res{"a", true}, res{"b", false}), "b failed")
	assert.Equal(t, "b", pick(nil, res{"a", true}, res{"b", true}, res{"c", false}), "no order: the results' order")
	assert.Equal(t, "-", pick([]string{"a"}, res{"a", false}))
	assert.Equal(t, "-", pick(nil))
}
