package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMasterKeyFileCreatedAndReused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // does not exist yet
	box1, created, err := LoadOrCreateMasterKey(dir, "")
	require.NoError(t, err)
	require.True(t, created)

	path := filepath.Join(dir, MasterKeyFile)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	require.Len(t, key, MasterKeySize)

	// No temporary files are left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)

	sealed, err := box1.Seal([]byte("hunter2"), "phone_number:1:auth_password")
	require.NoError(t, err)

	box2, created, err := LoadOrCreateMasterKey(dir, "")
	require.NoError(t, err)
	require.False(t, created)
	pt, err := box2.Open(sealed, "phone_number:1:auth_password")
	require.NoError(t, err)
	require.Equal(t, "hunter2", string(pt))

	data2, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, data, data2, "key file must not be rewritten")
}

func TestMasterKeyConcurrentFirstStart(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	boxes := make([]*Box, n)
	var createdCount int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			b, created, err := LoadOrCreateMasterKey(dir, "")
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			boxes[i] = b
			if created {
				createdCount++
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, createdCount)
	sealed, err := boxes[0].Seal([]byte("x"), "a")
	require.NoError(t, err)
	for _, b := range boxes {
		pt, err := b.Open(sealed, "a")
		require.NoError(t, err, "all starters must agree on one key")
		require.Equal(t, "x", string(pt))
	}
}

func TestMasterKeyFileBadPermissionsRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o660, 0o666, 0o700 | 0o010} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, MasterKeyFile)
			require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("ab", 32)), 0o600))
			require.NoError(t, os.Chmod(path, mode))
			_, _, err := LoadOrCreateMasterKey(dir, "")
			require.ErrorIs(t, err, errKeyPerm)
			require.Contains(t, err.Error(), path)
			require.Contains(t, err.Error(), "chmod 600")
		})
	}
}

func TestMasterKeyFileContents(t *testing.T) {
	tests := []struct {
		name    string
		content string
		wantErr bool
	}{
		{"hex with newline", strings.Repeat("0f", 32) + "\n", false},
		{"base64", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)), false},
		{"empty", "", true},
		{"short hex", strings.Repeat("0f", 16), true},
		{"garbage", "not a key at all!", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, MasterKeyFile), []byte(tt.content), 0o600))
			box, created, err := LoadOrCreateMasterKey(dir, "")
			require.False(t, created)
			if tt.wantErr {
				require.ErrorIs(t, err, errKeyFormat)
				require.Nil(t, box)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, box)
		})
	}
}

func TestMasterKeyPathIsDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, MasterKeyFile), 0o700))
	_, _, err := LoadOrCreateMasterKey(dir, "")
	require.ErrorIs(t, err, errKeyNotFile)
}

func TestMasterKeyFromEnv(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	tests := []struct {
		name    string
		env     string
		wantErr bool
	}{
		{"hex lower", hex.EncodeToString(key), false},
		{"hex upper", strings.ToUpper(hex.EncodeToString(key)), false},
		{"hex with spaces", "  " + hex.EncodeToString(key) + "\n", false},
		{"base64 std", base64.StdEncoding.EncodeToString(key), false},
		{"base64 raw", base64.RawStdEncoding.EncodeToString(key), false},
		{"hex 16 bytes", hex.EncodeToString(key[:16]), true},
		{"hex 33 bytes", hex.EncodeToString(append(key, 1)), true},
		{"base64 24 bytes", base64.StdEncoding.EncodeToString(key[:24]), true},
		{"base64 48 bytes", base64.StdEncoding.EncodeToString(append(key, key[:16]...)), true},
		{"64 chars not hex", strings.Repeat("zz", 32) + "!", true},
		{"garbage", "correct horse battery staple", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			box, created, err := LoadOrCreateMasterKey(dir, tt.env)
			require.False(t, created)
			if tt.wantErr {
				require.ErrorIs(t, err, errKeyFormat)
				require.Contains(t, err.Error(), MasterKeyEnv)
				return
			}
			require.NoError(t, err)
			// The env key is the key: it opens what a Box on the raw key seals.
			ref, err := NewBox(key)
			require.NoError(t, err)
			sealed, err := ref.Seal([]byte("s"), "aad")
			require.NoError(t, err)
			pt, err := box.Open(sealed, "aad")
			require.NoError(t, err)
			require.Equal(t, "s", string(pt))
			// No key file is created when the env supplies the key.
			_, err = os.Stat(filepath.Join(dir, MasterKeyFile))
			require.ErrorIs(t, err, os.ErrNotExist)
		})
	}
}

func newTestBox(t testing.TB) *Box {
	t.Helper()
	box, err := NewBox(bytes.Repeat([]byte{0x42}, 32))
	require.NoError(t, err)
	return box
}

func TestSealOpenRoundTrip(t *testing.T) {
	box := newTestBox(t)
	for _, pt := range [][]byte{nil, []byte(""), []byte("a"), []byte("sip digest password"), bytes.Repeat([]byte{0}, 4096)} {
		sealed, err := box.Seal(pt, "phone_number:42:auth_password")
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(sealed, "v1:"))
		got, err := box.Open(sealed, "phone_number:42:auth_password")
		require.NoError(t, err)
		require.Equal(t, len(pt), len(got))
		require.True(t, bytes.Equal(pt, got))
	}
}

func TestSealIsRandomisedAndHidesPlaintext(t *testing.T) {
	box := newTestBox(t)
	pt := "SuperSecretPassword123"
	a, err := box.Seal([]byte(pt), "x")
	require.NoError(t, err)
	b, err := box.Seal([]byte(pt), "x")
	require.NoError(t, err)
	require.NotEqual(t, a, b, "nonces must differ")
	for _, s := range []string{a, b} {
		require.NotContains(t, s, pt)
		require.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(pt)))
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "v1:"))
		require.NoError(t, err)
		require.False(t, bytes.Contains(raw, []byte(pt)))
	}
	// Formatting a Box never dumps key material.
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		require.Equal(t, "auth.Box(aes-256-gcm, v1)", fmt.Sprintf(f, box))
	}
}

func TestOpenFailures(t *testing.T) {
	box := newTestBox(t)
	sealed, err := box.Seal([]byte("secret"), "phone_number:1:auth_password")
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))
	require.NoError(t, err)

	flip := func(i int) string {
		c := bytes.Clone(raw)
		c[i] ^= 0x01
		return "v1:" + base64.StdEncoding.EncodeToString(c)
	}
	other, err := NewBox(bytes.Repeat([]byte{0x43}, 32))
	require.NoError(t, err)

	tests := []struct {
		name   string
		box    *Box
		sealed string
		aad    string
		want   error
	}{
		{"wrong aad (other row)", box, sealed, "phone_number:2:auth_password", ErrDecrypt},
		{"wrong aad (other field)", box, sealed, "phone_number:1:webhook_secret", ErrDecrypt},
		{"empty aad", box, sealed, "", ErrDecrypt},
		{"wrong key", other, sealed, "phone_number:1:auth_password", ErrDecrypt},
		{"nonce tampered", box, flip(0), "phone_number:1:auth_password", ErrDecrypt},
		{"ciphertext tampered", box, flip(nonceSize), "phone_number:1:auth_password", ErrDecrypt},
		{"tag tampered", box, flip(len(raw) - 1), "phone_number:1:auth_password", ErrDecrypt},
		{"truncated", box, "v1:" + base64.StdEncoding.EncodeToString(raw[:len(raw)-1]), "phone_number:1:auth_password", ErrDecrypt},
		{"too short", box, "v1:" + base64.StdEncoding.EncodeToString(raw[:nonceSize+15]), "phone_number:1:auth_password", errSealedShort},
		{"no prefix", box, strings.TrimPrefix(sealed, "v1:"), "phone_number:1:auth_password", errSealedForm},
		{"unknown version", box, "v2:" + strings.TrimPrefix(sealed, "v1:"), "phone_number:1:auth_password", errSealedForm},
		{"bad base64", box, "v1:***", "phone_number:1:auth_password", errSealedForm},
		{"empty", box, "", "phone_number:1:auth_password", errSealedForm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, err := tt.box.Open(tt.sealed, tt.aad)
			require.Error(t, err)
			require.True(t, errors.Is(err, tt.want), "got %v", err)
			require.Nil(t, pt)
		})
	}
}

func TestNewBoxKeyLength(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33} {
		_, err := NewBox(make([]byte, n))
		require.ErrorIs(t, err, errKeyFormat)
	}
}

func BenchmarkSeal(b *testing.B) {
	box := newTestBox(b)
	pt := []byte("a sip digest password")
	for b.Loop() {
		_, _ = box.Seal(pt, "phone_number:1:auth_password")
	}
}

func BenchmarkOpen(b *testing.B) {
	box := newTestBox(b)
	sealed, _ := box.Seal([]byte("a sip digest password"), "phone_number:1:auth_password")
	for b.Loop() {
		_, _ = box.Open(sealed, "phone_number:1:auth_password")
	}
}
