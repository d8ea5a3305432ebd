package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	// MasterKeyFile is the name of the master key file inside the data directory.
	MasterKeyFile = "master.key"
	// MasterKeyEnv is the environment variable that, when set, supplies the
	// master key instead of the key file.
	MasterKeyEnv = "SWITCHBOARD_SECRET_KEY"
	// MasterKeySize is the master key length in bytes (AES-256).
	MasterKeySize = 32

	sealPrefix  = "v1:"
	nonceSize   = 12
	maxKeyFile  = 4096
	tmpKeyGlob  = ".master.key.*.tmp"
	keyFileMode = 0o600
)

var (
	// ErrDecrypt is returned by [Box.Open] when a sealed value fails
	// authentication: a different master key, a different aad, or tampering.
	ErrDecrypt = errors.New("decrypt secret: authentication failed (wrong master key, wrong record binding, or tampered data)")

	errKeyFormat   = errors.New("master key must be 32 bytes encoded as 64 hex characters or base64")
	errKeyPerm     = errors.New("master key file must not be readable or writable by group or others (chmod 600)")
	errKeyNotFile  = errors.New("master key path is not a regular file")
	errSealedForm  = errors.New("sealed secret: malformed")
	errSealedShort = errors.New("sealed secret: too short")
)

// Box seals and opens secrets at rest with AES-256-GCM under the master key.
// A Box is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
	key  []byte
}

// NewBox returns a Box for a 32-byte master key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != MasterKeySize {
		return nil, fmt.Errorf("%w: got %d bytes", errKeyFormat, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("new box: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("new box: %w", err)
	}
	return &Box{aead: aead, key: append([]byte(nil), key...)}, nil
}

// DeriveKey returns a 32-byte key for purpose, derived from the master
// key (HMAC-SHA256 of purpose): data sealed with it (recordings) never
// shares a key with the secrets the Box seals itself.
func (b *Box) DeriveKey(purpose string) []byte {
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte("switchboard derive v1\x00" + purpose))
	return m.Sum(nil)
}

// LoadOrCreateMasterKey returns the Box for the appliance's master key.
//
// When envValue (the value of [MasterKeyEnv]) is non-empty it is decoded as
// 64 hex characters or standard base64 (padded or raw) of 32 bytes and the key
// file is not consulted. Otherwise <dataDir>/master.key is read; a file with
// any group or other permission bit set is refused. When the file does not
// exist, 32 random bytes are written to it as hex with mode 0600 and created
// is true. Creation is atomic: the key is written and synced to a temporary
// file that is then hard-linked into place, so a crash never leaves a partial
// key file and two concurrent first starts agree on one key.
func LoadOrCreateMasterKey(dataDir, envValue string) (box *Box, created bool, err error) {
	if strings.TrimSpace(envValue) != "" {
		key, err := decodeMasterKey(envValue)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", MasterKeyEnv, err)
		}
		box, err := NewBox(key)
		return box, false, err
	}
	path := filepath.Join(dataDir, MasterKeyFile)
	key, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, created, err = createKeyFile(dataDir, path)
	}
	if err != nil {
		return nil, false, err
	}
	box, err = NewBox(key)
	return box, created, err
}

// decodeMasterKey accepts 64 hex characters or base64 (std, padded or raw)
// of exactly 32 bytes; surrounding whitespace is ignored.
func decodeMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*MasterKeySize {
		if key, err := hex.DecodeString(s); err == nil {
			return key, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != MasterKeySize {
				return nil, fmt.Errorf("%w: decodes to %d bytes", errKeyFormat, len(key))
			}
			return key, nil
		}
	}
	return nil, fmt.Errorf("%w: %d characters that are neither hex nor base64", errKeyFormat, len(s))
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // fs.ErrNotExist is checked by the caller.
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("master key %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s", errKeyNotFile, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o", errKeyPerm, path, perm)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile))
	if err != nil {
		return nil, fmt.Errorf("master key %s: %w", path, err)
	}
	key, err := decodeMasterKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("master key %s: %w", path, err)
	}
	return key, nil
}

func createKeyFile(dataDir, path string) ([]byte, bool, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("create master key: %w", err)
	}
	key := make([]byte, MasterKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("create master key: %w", err)
	}
	tmp, err := os.CreateTemp(dataDir, tmpKeyGlob) // O_EXCL, mode 0600
	if err != nil {
		return nil, false, fmt.Errorf("create master key: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	err = tmp.Chmod(keyFileMode)
	if err == nil {
		_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, fmt.Errorf("create master key: %w", err)
	}
	// link(2) fails with EEXIST instead of replacing, so a concurrent creator
	// cannot be overwritten; the loser reads the winner's key.
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			key, err := readKeyFile(path)
			return key, false, err
		}
		return nil, false, fmt.Errorf("create master key: %w", err)
	}
	syncDir(dataDir)
	return key, true, nil
}

// syncDir makes the new directory entry durable; failure is not fatal
// because the key file itself is already synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// Seal encrypts plaintext and binds it to aad, which names the record and
// field the secret belongs to (for example "phone_number:<id>:auth_password"),
// so a sealed value copied into another row fails to open. The result is
// "v1:" followed by standard base64 of nonce|ciphertext|tag.
func (b *Box) Seal(plaintext []byte, aad string) (string, error) {
	buf := make([]byte, nonceSize, nonceSize+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("seal secret: %w", err)
	}
	buf = b.aead.Seal(buf, buf[:nonceSize], plaintext, []byte(aad))
	return sealPrefix + base64.StdEncoding.EncodeToString(buf), nil
}

// Open decrypts a value produced by [Box.Seal] with the same aad. It returns
// an error wrapping [ErrDecrypt] when authentication fails.
func (b *Box) Open(sealed string, aad string) ([]byte, error) {
	body, ok := strings.CutPrefix(sealed, sealPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: missing %q version prefix", errSealedForm, sealPrefix)
	}
	raw, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSealedForm, err)
	}
	if len(raw) < nonceSize+b.aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes", errSealedShort, len(raw))
	}
	pt, err := b.aead.Open(nil, raw[:nonceSize], raw[nonceSize:], []byte(aad))
	if err != nil {
		return nil, ErrDecrypt
	}
	return pt, nil
}

// String describes the Box without revealing key material.
func (b *Box) String() string { return "auth.Box(aes-256-gcm, v1)" }

// GoString describes the Box without revealing key material.
func (b *Box) GoString() string { return b.String() }
