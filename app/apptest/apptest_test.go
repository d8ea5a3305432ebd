package apptest

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDaemonServesAndStopsTwice(t *testing.T) {
	dir := t.TempDir()
	d := Start(t, Config(t, dir, map[string]string{"SWITCHBOARD_ADMIN_KEY": "sk-admin-apptest-0123456789"}))
	require.Equal(t, "sk-admin-apptest-0123456789", d.OwnerKey, "the owner key is the configured admin key")
	require.Equal(t, dir, d.DataDir)

	status, _, body := d.Do(t, http.MethodGet, "/healthz", "", nil)
	require.Equal(t, http.StatusOK, status, "%s", body)

	// No key: the JSON error body, decoded by ErrorOf.
	status, _, body = d.Do(t, http.MethodGet, "/v1/agents", "", nil)
	require.Equal(t, http.StatusUnauthorized, status)
	code, _, msg := ErrorOf(t, body)
	require.NotEmpty(t, code)
	require.NotEmpty(t, msg)

	// JSON requires the status and decodes; a raw string body is sent as is.
	m := d.JSON(t, http.MethodGet, "/v1/agents", d.OwnerKey, nil, http.StatusOK)
	require.Len(t, m["agents"], 1, "the demo agent is there")
	status, _, body = d.Do(t, http.MethodPost, "/v1/agents", d.OwnerKey, "{not json")
	require.Equal(t, http.StatusBadRequest, status, "%s", body)

	d.Stop(t)
	d.Stop(t) // idempotent
	_, err := http.Get(d.URL + "/healthz")
	require.Error(t, err, "a stopped daemon no longer listens")
}

func TestOwnerKeyFromDataDir(t *testing.T) {
	d := Start(t, Config(t, t.TempDir(), nil))
	require.NotEmpty(t, d.OwnerKey, "the bootstrap owner key is read from the data directory")
	d.JSON(t, http.MethodGet, "/v1/api-key", d.OwnerKey, nil, http.StatusOK)
}

func TestFilesContain(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "x"), []byte("one secret here"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "y"), []byte("nothing"), 0o600))
	require.Equal(t, []string{filepath.Join(dir, "a", "x")}, FilesContain(t, dir, "secret"))
	require.Empty(t, FilesContain(t, dir, "absent"))
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	done := make(chan struct{})
	go func() {
		for i := 0; i < 100; i++ {
			_, _ = b.Write([]byte("x"))
		}
		close(done)
	}()
	for i := 0; i < 100; i++ {
		_, _ = b.Write([]byte("y"))
		_ = b.String()
	}
	<-done
	require.Len(t, b.String(), 200)
}
