// Package retry holds what the model providers share about retrying a call:
// the exponential backoff, the server's Retry-After, and a wait that a
// context cancels.
package retry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// MaxAfter is the longest wait a server may ask for and get: a call asked to
// wait longer fails at once, with the wait in its error.
const MaxAfter = time.Minute

// Backoff is exponential backoff with jitter.
type Backoff struct {
	Base time.Duration // the wait before the first retry
	Max  time.Duration // the longest wait
}

// Delay returns the wait before retry n (0 for the first): Base·2^n, at most
// Max, less up to a quarter of it at random so that clients spread out.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Base
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if j := int64(d / 4); j > 0 {
		d -= time.Duration(rand.Int64N(j))
	}
	return max(d, 0)
}

// After reads the wait a response asks for: Retry-After-Ms (milliseconds),
// else Retry-After (seconds, or an HTTP date). 0 if none.
func After(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			if s > 0 {
				return time.Duration(s * float64(time.Second))
			}
			return 0
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := time.Until(t); d > 0 {
				return d
			}
		}
	}
	return 0
}

// Sleep waits d, or until ctx is done and then returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
