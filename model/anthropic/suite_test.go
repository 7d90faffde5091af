package anthropic_test

import (
	"testing"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/modeltest"
)

// The provider passes the conformance suite against the recorded exchanges
// of each scenario, and sends the request bodies each exchange expects.
func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, s modeltest.Scenario) model.Model {
		m, _ := newModel(t, string(s), nil)
		return m
	})
}
