package sqlstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// execRecorder records the messages each statement inserts.
type execRecorder struct{ statements [][]string }

func (q *execRecorder) Exec(_ context.Context, _ string, args ...any) error {
	var ms []string
	for i := 4; i < len(args); i += 2 { // after the key: seq, data pairs
		ms = append(ms, args[i].(string))
	}
	q.statements = append(q.statements, ms)
	return nil
}
func (q *execRecorder) ExecN(context.Context, string, ...any) (int64, error) { return 0, nil }
func (q *execRecorder) Query(context.Context, string, ...any) (Rows, error)  { return nil, nil }

// SPEC S1: messages are inserted a few hundred a statement, and a
// statement carries no more than the byte bound of messages unless one
// message is that long alone; every message is inserted once, in order.
func TestInsertMessages_KeepsEachStatementWithinItsBounds(t *testing.T) {
	m := func(n int) json.RawMessage { return json.RawMessage(`{"a":"` + strings.Repeat("x", n-8) + `"}`) }
	key := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	for _, tc := range []struct {
		name  string
		sizes []int
		want  [][]int // the sizes each statement carries
	}{
		{"within the bound", []int{30, 30, 40}, [][]int{{30, 30, 40}}},
		{"split at the bound", []int{40, 40, 40, 40}, [][]int{{40, 40}, {40, 40}}},
		{"one longer than the bound alone", []int{20, 150, 20, 20}, [][]int{{20}, {150}, {20, 20}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []json.RawMessage
			for _, n := range tc.sizes {
				msgs = append(msgs, m(n))
			}
			q := &execRecorder{}
			require.NoError(t, insertMessagesUpTo(context.Background(), q, key, 0, msgs, 100))
			var got [][]int
			var all []string
			for _, st := range q.statements {
				var sizes []int
				for _, s := range st {
					sizes = append(sizes, len(s))
					all = append(all, s)
				}
				got = append(got, sizes)
			}
			assert.Equal(t, tc.want, got)
			require.Len(t, all, len(msgs))
			for i := range msgs {
				assert.Equal(t, string(msgs[i]), all[i])
			}
		})
	}

	var many []json.RawMessage
	for range 450 {
		many = append(many, m(10))
	}
	q := &execRecorder{}
	require.NoError(t, insertMessagesUpTo(context.Background(), q, key, 0, many, persistence.MaxValueSize))
	var counts []int
	for _, st := range q.statements {
		counts = append(counts, len(st))
	}
	assert.Equal(t, []int{200, 200, 50}, counts, "a few hundred rows a statement")
}
