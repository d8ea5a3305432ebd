package main

import (
	"context"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/media"
)

// TestSippCounts reads the cumulative call counts from the last line of
// sipp's -trace_stat CSV, and -1 when the file says nothing.
func TestSippCounts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stat.csv")
	require.NoError(t, os.WriteFile(path, []byte("StartTime;SuccessfulCall(C);FailedCall(C)\n"+
		"x;10;1\nx;498;2\n"), 0o600))
	ok, failed := sippCounts(path)
	require.Equal(t, 498, ok)
	require.Equal(t, 2, failed)
	ok, failed = sippCounts(filepath.Join(dir, "missing.csv"))
	require.Equal(t, -1, ok)
	require.Equal(t, -1, failed)
}

// TestScenario: the generated sipp scenario is well-formed XML that plays
// the audio file for the hold time.
func TestScenario(t *testing.T) {
	s := scenario("/tmp/a.raw", 30*time.Second, media.PCMU)
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	dec.Entity = xml.HTMLEntity
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // the scenario is ASCII
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.Contains(t, s, "/tmp/a.raw,-1,0")
	require.Contains(t, s, "30000")
	require.Contains(t, s, "a=rtpmap:0 PCMU/8000")
	require.NotContains(t, scenario("", 0, media.PCMA), "rtp_stream", "call setup only: no media")
}

// TestLogSummary counts the appliance's warnings and errors by message,
// most frequent first, and skips other levels and lines that are not JSON.
func TestLogSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.log")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join([]string{
		`{"level":"warn","message":"a"}`, `{"level":"error","message":"b"}`, `{"level":"warn","message":"a"}`,
		`{"level":"info","message":"c"}`, `not json`, `{"level":"warn","message":"b"}`,
	}, "\n")), 0o600))
	require.Equal(t, []logCount{{"warn", "a", 2}, {"error", "b", 1}, {"warn", "b", 1}}, logSummary(path))
	require.Equal(t, "error", logSummary(filepath.Join(t.TempDir(), "missing"))[0].level)
}

// TestLongestPause measures pauses as the echo engine's VAD hears them
// (10 ms frames under -40 dBFS), the run across the loop's join as one.
func TestLongestPause(t *testing.T) {
	loud, quiet := make([]int16, 80), make([]int16, 80)
	for i := range loud {
		loud[i] = 8000
	}
	var pcm []int16
	add := func(f []int16, n int) {
		for range n {
			pcm = append(pcm, f...)
		}
	}
	add(quiet, 12) // 120 ms at the start...
	add(loud, 50)
	add(quiet, 30) // 300 ms inside
	add(loud, 50)
	add(quiet, 25) // ...and 250 ms at the end: 370 ms across the join
	require.Equal(t, 370*time.Millisecond, longestPause(pcm, 8000))
	require.Equal(t, 100*time.Millisecond, longestPause(make([]int16, 800), 8000), "all silence: one pause as long as the audio")
}

// TestRenderSpeech renders the continuous caller with the real espeak-ng
// and sox (make deps installs them): long enough to loop rarely, in the
// caller's law, and without a pause that would end a turn.
func TestRenderSpeech(t *testing.T) {
	for _, c := range []media.Codec{media.PCMA, media.PCMU} {
		out := filepath.Join(t.TempDir(), "speech.g711")
		length, pause, err := renderSpeech(context.Background(), out, c)
		require.NoError(t, err)
		t.Logf("%s: %v of speech, longest pause %v", c.Name, length, pause)
		require.Greater(t, length, 20*time.Second)
		require.Less(t, pause, maxSpeechPause)
		raw, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, length, time.Duration(len(raw))*time.Second/8000)
		require.Greater(t, media.RMS(c.DecodeFrame(nil, raw)), 1000.0, "speech in %s, not noise of the other law", c.Name)
	}
}

// TestRSSPerCall: the headline figure is the peak resident set (VmHWM,
// the largest of the samples and the end) over the idle process, per peak
// live call.
func TestRSSPerCall(t *testing.T) {
	r := &report{idle: procSample{rss: 40 << 20}, final: procSample{hwm: 90 << 20}}
	r.samples = []sample{{app: procSample{hwm: 60 << 20, rss: 60 << 20}, active: 100}, {app: procSample{hwm: 100 << 20, rss: 95 << 20}, active: 200}}
	hwm, rss := r.peakRSS()
	require.EqualValues(t, 100<<20, hwm)
	require.EqualValues(t, 95<<20, rss)
	require.InDelta(t, 60*1024/200.0, r.rssPerCall(200), 0.001)
	require.Zero(t, r.rssPerCall(0))
}
