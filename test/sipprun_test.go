package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sippRun is one sipp process.
type sippRun struct {
	done chan struct{}
	out  string
	err  error
}

// startSippScenario runs sipp on loopback with the scenario
// testdata/sipp/<file> rendered with data and a media port of its own;
// args are what differs between uses (the target, -s, -m, -l, -r, -p).
// sipp fails once limit passed (-timeout); the process is killed 10 s
// later, and at the test's end. Once done is closed, out holds its
// message log, its output and its error log.
func startSippScenario(t *testing.T, file string, data any, limit time.Duration, args ...string) *sippRun {
	t.Helper()
	_, err := exec.LookPath("sipp")
	require.NoError(t, err, "sipp must be installed (apt sip-tester)")
	dir := t.TempDir()
	all := append([]string{"-sf", render(t, file, data), "-i", "127.0.0.1", "-mp", fmt.Sprint(freePort(t, "udp")),
		"-t", "u1", "-timeout", fmt.Sprintf("%ds", int(limit.Seconds())), "-timeout_error", "-nostdin",
		"-trace_err", "-error_file", filepath.Join(dir, "err.log"),
		"-trace_msg", "-message_file", filepath.Join(dir, "msg.log")}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), limit+10*time.Second)
	cmd := exec.CommandContext(ctx, "sipp", all...)
	cmd.Dir = dir
	r := &sippRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer cancel()
		out, err := cmd.CombinedOutput()
		errLog, _ := os.ReadFile(filepath.Join(dir, "err.log"))
		msgLog, _ := os.ReadFile(filepath.Join(dir, "msg.log"))
		r.out, r.err = string(msgLog)+"\n"+string(out)+"\n"+string(errLog), err
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// startSippListener is startSippScenario for sipp as a callee: on a free
// loopback port, which it returns once sipp holds it (before the INVITE
// that is to reach it).
func startSippListener(t *testing.T, file string, data any, limit time.Duration, args ...string) (int, *sippRun) {
	t.Helper()
	port := freePort(t, "udp")
	r := startSippScenario(t, file, data, limit, append([]string{"-p", fmt.Sprint(port)}, args...)...)
	waitUDPBound(t, port)
	return port, r
}

// wait waits for sipp and fails the test when it failed.
func (r *sippRun) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(within):
		t.Fatalf("sipp still running after %s", within)
	}
	if r.err != nil {
		t.Fatalf("sipp failed: %v\n%s", r.err, tail(r.out, 4000))
	}
}
