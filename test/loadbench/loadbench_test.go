package main

import (
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
