package bedrock_test

import (
	"testing"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/modeltest"
)

// The Bedrock provider passes the conformance suite against recorded
// ConverseStream exchanges (testdata/<scenario>).
func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, s modeltest.Scenario) model.Model {
		m, _ := newReplayModel(t, string(s))
		return m
	})
}
