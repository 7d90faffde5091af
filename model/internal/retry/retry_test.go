package retry

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoff_DoublesWithJitterUpToMax(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	for n, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		for range 50 {
			d := b.Delay(n)
			assert.LessOrEqual(t, d, full, "retry %d", n)
			assert.Greater(t, d, full*3/4-1, "retry %d", n)
		}
	}
	assert.Zero(t, Backoff{}.Delay(3))
}

func TestAfter_Forms(t *testing.T) {
	h := func(k, v string) http.Header { return http.Header{http.CanonicalHeaderKey(k): {v}} }
	assert.Equal(t, 1500*time.Millisecond, After(h("retry-after-ms", "1500")))
	assert.Equal(t, 2*time.Second, After(h("retry-after", "2")))
	assert.Zero(t, After(h("retry-after", "0")))
	assert.Zero(t, After(h("retry-after", "soon")))
	assert.Zero(t, After(http.Header{}))
	d := After(h("retry-after", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat)))
	assert.InDelta(t, float64(30*time.Second), float64(d), float64(2*time.Second))
}

func TestSleep_EndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
	assert.NoError(t, Sleep(context.Background(), time.Millisecond))
}
