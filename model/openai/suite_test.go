package openai_test

import (
	"testing"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/modeltest"
)

// The provider passes the conformance suite against recorded exchanges;
// the replay server also checks every request body the suite makes
// (including the resume's, in AgentInterruptResume).
func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, s modeltest.Scenario) model.Model {
		return newModel(t, newReplay(t, string(s)))
	})
}
