package test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chromiumPath is Debian's chromium, which make deps installs.
const chromiumPath = "/usr/bin/chromium"

// browserDir holds the pinned puppeteer-core (package-lock.json) that
// drives it: make deps runs npm ci there.
func browserDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "browser")
}

// requireBrowser fails loudly when chromium, node or the pinned
// puppeteer-core is missing.
func requireBrowser(t *testing.T) {
	t.Helper()
	_, err := os.Stat(chromiumPath)
	require.NoError(t, err, "chromium must be installed at %s (make deps, as root)", chromiumPath)
	_, err = exec.LookPath("node")
	require.NoError(t, err, "node must be installed (make deps)")
	_, err = os.Stat(filepath.Join(browserDir(t), "node_modules", "puppeteer-core"))
	require.NoError(t, err, "puppeteer-core is not installed: run make deps (npm ci in test/browser)")
}

// runBrowser runs one job of test/browser/run.mjs and decodes its result
// into out; the page's console goes to the test log. The job fails on any
// error its page shows (a visible element of class "error" or role
// "alert"), on a dialog, an uncaught exception or a console error, but
// those a step of the job expects.
func runBrowser(t *testing.T, job map[string]any, timeout time.Duration, out any) {
	t.Helper()
	requireBrowser(t)
	job["chromium"] = chromiumPath
	raw, err := json.Marshal(job)
	require.NoError(t, err)
	jobFile := filepath.Join(t.TempDir(), "job.json")
	require.NoError(t, os.WriteFile(jobFile, raw, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(browserDir(t), "run.mjs"), jobFile)
	cmd.Dir = browserDir(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "node run.mjs: %s", stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last := []byte(lines[len(lines)-1])
	var common struct {
		Error    string   `json:"error"`
		Console  []string `json:"console"`
		Problems []string `json:"problems"`
	}
	require.NoError(t, json.Unmarshal(last, &common), "%s", stdout.String())
	for _, l := range common.Console {
		t.Logf("page %s", l)
	}
	require.Empty(t, common.Error, "the browser job failed")
	require.Empty(t, common.Problems, "the page showed or logged an error")
	require.NoError(t, json.Unmarshal(last, out))
}

// artefactDir is where a test keeps what a person should look at
// (screenshots): $SWITCHBOARD_TEST_ARTEFACTS/<test>, else a directory
// under the system's temp dir that outlives the test. Never committed.
func artefactDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("SWITCHBOARD_TEST_ARTEFACTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "switchboard-artefacts")
	}
	dir := filepath.Join(base, strings.ReplaceAll(t.Name(), "/", "_"))
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Logf("artefacts in %s", dir)
	return dir
}
