package persistence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// SPEC S5: a writer killed in the middle of any journal append leaves a
// record that loads as one of the versions saved before, whole: the journal
// is cut at every byte of its last line in turn, over random runs of saves
// (appends, history rewrites, durable checkpoints). Then a checkpoint writes
// the whole journal out as the same record.
func TestFileStore_JournalCutAtEveryByteLoadsASavedVersion(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(24) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			s, dir := fileStore(t)
			k := persistence.Key{SessionID: "p", Kind: persistence.KindAgent, ID: "a"}
			type state struct {
				data string
				msgs []string
			}
			saved := map[int64]state{}
			var v int64
			var msgs []string
			for i := range 12 {
				unchanged := len(msgs)
				switch rng.IntN(4) {
				case 0: // rewrite the tail
					unchanged = rng.IntN(len(msgs) + 1)
					msgs = msgs[:unchanged]
				case 1: // only the data changes
				default:
				}
				for range rng.IntN(3) {
					msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"text":"m%d-%d"}]}`, i, rng.IntN(1000)))
				}
				data := fmt.Sprintf(`{"i":%d}`, i)
				durable := rng.IntN(5) == 0 && i < 11 // the last save is in the journal
				var err error
				v, err = s.Save(ctx, rec(k, data, msgs...), persistence.SaveOptions{Base: v, Unchanged: unchanged, Durable: durable})
				require.NoError(t, err)
				saved[v] = state{data: data, msgs: append([]string(nil), msgs...)}
			}
			// Closed, the writer leaves no redo log: what follows reads
			// the journal alone (redo_test.go covers the log).
			require.NoError(t, s.Close())
			full, err := os.ReadFile(journalPath(dir, k))
			require.NoError(t, err)
			require.NotEmpty(t, full)
			lastStart := len(full) - 1
			for lastStart > 0 && full[lastStart-1] != '\n' {
				lastStart--
			}
			for cut := lastStart; cut <= len(full); cut++ {
				require.NoError(t, os.WriteFile(journalPath(dir, k), full[:cut], 0o644))
				fresh, err := persistence.NewFileStore(dir)
				require.NoError(t, err)
				r, err := fresh.Load(ctx, k)
				require.NoError(t, err, "cut at %d of %d", cut, len(full))
				want, ok := saved[r.Version]
				require.True(t, ok, "version %d was saved", r.Version)
				if cut < len(full) {
					require.Equal(t, v-1, r.Version, "a cut last line is not a save")
				} else {
					require.Equal(t, v, r.Version)
				}
				require.JSONEq(t, want.data, string(r.Data))
				require.Len(t, r.Messages, len(want.msgs))
				for i, m := range want.msgs {
					require.JSONEq(t, m, string(r.Messages[i]))
				}
				var anyJSON any
				require.NoError(t, json.Unmarshal(r.Data, &anyJSON))
			}

			// A checkpoint writes the journal out as the same record.
			require.NoError(t, os.WriteFile(journalPath(dir, k), full, 0o644))
			fresh, err := persistence.NewFileStore(dir)
			require.NoError(t, err)
			require.NoError(t, fresh.Checkpoint(ctx, k, false))
			b, err := os.ReadFile(journalPath(dir, k))
			require.NoError(t, err)
			require.Empty(t, b)
			r, err := fresh.Load(ctx, k)
			require.NoError(t, err)
			require.Equal(t, v, r.Version)
			require.JSONEq(t, saved[v].data, string(r.Data))
			require.Len(t, r.Messages, len(saved[v].msgs))
			for i, m := range saved[v].msgs {
				require.JSONEq(t, m, string(r.Messages[i]))
			}
		})
	}
}
