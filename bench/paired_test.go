package main

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePeerB4_ReadsTheNewInstancePerRequestFigure(t *testing.T) {
	out := []byte("(node:1) ExperimentalWarning: something\n" +
		`{"bench":"b1_invoke_one_tool","modes":{"fresh":{"perSecond":2000}}}` + "\n" +
		`{"bench":"b4_session_interrupt_resume","unit":"cycles/s","modes":{"new-instance-per-request":{"perSecond":231.5},"same-instance":{"perSecond":300}}}` + "\n")
	got, err := parsePeerB4(out)
	require.NoError(t, err)
	assert.InDelta(t, 231.5, got, 1e-9)
}

func TestParsePeerB4_WithoutTheFigureIsAnError(t *testing.T) {
	for _, out := range []string{
		"",
		`{"bench":"b4_session_interrupt_resume","modes":{"same-instance":{"perSecond":300}}}`,
		`{"bench":"b1_invoke_one_tool","modes":{"new-instance-per-request":{"perSecond":300}}}`,
		`{"bench":"b4_session_interrupt_resume","modes":{"new-instance-per-request":{"perSecond":0}}}`,
	} {
		_, err := parsePeerB4([]byte(out))
		assert.Error(t, err, out)
	}
}

func TestRatios_MedianAndRangeOverRounds(t *testing.T) {
	rounds := []pairedRound{{peer: 100, durable: 500}, {peer: 200, durable: 600}, {peer: 100, durable: 300}}
	s := ratios(rounds, func(r pairedRound) float64 { return r.durable / r.peer })
	assert.Equal(t, spread{median: 3, low: 3, high: 5}, s)
	assert.Equal(t, "3.0× (3.0–5.0×)", s.String())

	even := ratios(rounds[:2], func(r pairedRound) float64 { return r.durable / r.peer })
	assert.Equal(t, spread{median: 4, low: 3, high: 5}, even)
}

func TestPairedB4_NeedsAnInstalledPeer(t *testing.T) {
	err := pairedB4(context.Background(), io.Discard, nil, t.TempDir(), 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "scripts/peer-bench.sh")
}

func TestRun_OnlyB4NeedsPeerDir(t *testing.T) {
	err := run([]string{"-only", "b4"}, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-peer-dir")
	require.Error(t, run([]string{"-only", "b4", "-peer-dir", t.TempDir(), "-paired", "0"}, io.Discard))
	for _, only := range []string{"b3", "b5"} {
		err := run([]string{"-only", only, "-peer-dir", t.TempDir()}, io.Discard)
		require.Error(t, err, only)
		assert.Contains(t, err.Error(), "-peer-dir is for b4")
	}
}
