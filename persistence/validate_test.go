package persistence_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// SPEC S5: the reflective strict decoding refuses an object that has a key
// twice, as the hand-written readers do, rather than keeping the last one.
func TestDecodeExact_RefusesAKeyRepeatedInAnObject(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type record struct {
		Name  string  `json:"name"`
		Items []inner `json:"items"`
	}
	var r record
	require.NoError(t, persistence.DecodeExact([]byte(`{"name":"a","items":[{"n":1}]}`), &r))
	assert.Equal(t, record{Name: "a", Items: []inner{{N: 1}}}, r)
	for _, raw := range []string{
		`{"name":"b","name":"a","items":[{"n":1}]}`,
		`{"name":"a","items":[{"n":2,"n":1}]}`,
	} {
		err := persistence.DecodeExact([]byte(raw), &record{})
		require.Error(t, err, raw)
		assert.Contains(t, err.Error(), "twice", raw)
	}
}
