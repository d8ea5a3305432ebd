package recording

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"switchboard/media/wav"
)

// The sealed file: a header, then chunks of chunkSize bytes of PCM (the
// last one shorter), each sealed alone with AES-256-GCM.
//
//	magic (8) | nonce prefix (8) | chunk size (4) | rate (2) | channels (2)
//	chunk 0: ciphertext + tag (16) | chunk 1 | …
const (
	sealedMagic     = "SBREC01\x00"
	sealedHeaderLen = 24
	tagLen          = 16
)

var errSealed = errors.New("recording: sealed file is malformed or does not open with this key")

// newAEAD returns AES-256-GCM under key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("recording key: %w", err)
	}
	return cipher.NewGCM(block)
}

func chunkNonce(prefix []byte, i uint32) []byte {
	n := make([]byte, 12)
	copy(n, prefix[:8])
	binary.BigEndian.PutUint32(n[8:], i)
	return n
}

// sealedWriter writes a sealed file: PCM is gathered into whole chunks,
// each sealed and written once (a nonce is never reused); Close seals the
// partial last one.
type sealedWriter struct {
	f      *os.File
	aead   cipher.AEAD
	prefix []byte
	aad    []byte
	chunk  int
	buf    []byte
	index  uint32
	bytes  int64
}

func newSealedWriter(f *os.File, aead cipher.AEAD, callID string, rate, channels, chunk int) (*sealedWriter, error) {
	w := &sealedWriter{f: f, aead: aead, prefix: make([]byte, 8), aad: []byte(callID), chunk: chunk, buf: make([]byte, 0, chunk)}
	if _, err := rand.Read(w.prefix); err != nil {
		return nil, err
	}
	h := make([]byte, 0, sealedHeaderLen)
	h = append(h, sealedMagic...)
	h = append(h, w.prefix...)
	h = binary.LittleEndian.AppendUint32(h, uint32(chunk))
	h = binary.LittleEndian.AppendUint16(h, uint16(rate))
	h = binary.LittleEndian.AppendUint16(h, uint16(channels))
	if _, err := f.Write(h); err != nil {
		return nil, fmt.Errorf("recording: write header: %w", err)
	}
	return w, nil
}

// Write appends PCM bytes, sealing each chunk as it fills.
func (w *sealedWriter) Write(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), w.chunk-len(w.buf))
		w.buf = append(w.buf, p[:n]...)
		p = p[n:]
		if len(w.buf) == w.chunk {
			if err := w.seal(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *sealedWriter) seal() error {
	if len(w.buf) == 0 {
		return nil
	}
	out := w.aead.Seal(nil, chunkNonce(w.prefix, w.index), w.buf, w.aad)
	if _, err := w.f.Write(out); err != nil {
		return fmt.Errorf("recording: write chunk: %w", err)
	}
	w.index++
	w.bytes += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// Checkpoint does nothing: only whole chunks are written while the call
// runs (each second of audio is one chunk).
func (w *sealedWriter) Checkpoint() error { return nil }

// Close seals the last, partial chunk.
func (w *sealedWriter) Close() error { return w.seal() }

// Bytes is the PCM written so far.
func (w *sealedWriter) Bytes() int64 { return w.bytes + int64(len(w.buf)) }

// sealedReader is an io.ReadSeeker over the WAV file a sealed file holds:
// a computed 44-byte header, then the PCM, decrypted a chunk at a time.
type sealedReader struct {
	f        *os.File
	aead     cipher.AEAD
	prefix   []byte
	aad      []byte
	chunk    int64
	chunks   int64 // complete chunks plus the last one
	lastLen  int64 // plaintext length of the last chunk
	size     int64 // of the WAV: header + PCM
	header   []byte
	off      int64
	cacheIdx int64
	cache    []byte
}

// openSealed reads a sealed file's header and checks its last chunk (a
// chunk torn by a crash is left out).
func openSealed(f *os.File, aead cipher.AEAD, callID string) (*sealedReader, error) {
	h := make([]byte, sealedHeaderLen)
	if _, err := io.ReadFull(f, h); err != nil || string(h[:8]) != sealedMagic {
		return nil, errSealed
	}
	r := &sealedReader{f: f, aead: aead, prefix: append([]byte(nil), h[8:16]...), aad: []byte(callID), cacheIdx: -1}
	r.chunk = int64(binary.LittleEndian.Uint32(h[16:]))
	rate, channels := int(binary.LittleEndian.Uint16(h[20:])), int(binary.LittleEndian.Uint16(h[22:]))
	if r.chunk <= 0 || r.chunk > 1<<24 || rate == 0 || channels == 0 {
		return nil, errSealed
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	body := fi.Size() - sealedHeaderLen
	sealed := r.chunk + tagLen
	r.chunks = body / sealed
	r.lastLen = r.chunk
	if rem := body % sealed; rem > tagLen {
		r.chunks++
		r.lastLen = rem - tagLen
	}
	// A crash may tear the last chunk's write: leave it out. The chunk
	// before it must open (else the key or the file is wrong).
	if r.chunks > 0 {
		if _, err := r.load(r.chunks - 1); err != nil {
			r.chunks--
			r.lastLen = r.chunk
			r.cacheIdx = -1
			if r.chunks > 0 {
				if _, err := r.load(r.chunks - 1); err != nil {
					return nil, err
				}
			}
		}
	}
	pcm := int64(0)
	if r.chunks > 0 {
		pcm = (r.chunks-1)*r.chunk + r.lastLen
	}
	r.header = wav.HeaderFor(rate, channels, uint32(pcm))
	r.size = int64(len(r.header)) + pcm
	return r, nil
}

// load decrypts chunk i into the cache.
func (r *sealedReader) load(i int64) ([]byte, error) {
	if r.cacheIdx == i {
		return r.cache, nil
	}
	n := r.chunk
	if i == r.chunks-1 {
		n = r.lastLen
	}
	buf := make([]byte, n+tagLen)
	if _, err := r.f.ReadAt(buf, sealedHeaderLen+i*(r.chunk+tagLen)); err != nil {
		return nil, fmt.Errorf("%w: chunk %d: %w", errSealed, i, err)
	}
	out, err := r.aead.Open(buf[:0], chunkNonce(r.prefix, uint32(i)), buf, r.aad)
	if err != nil {
		return nil, fmt.Errorf("%w: chunk %d", errSealed, i)
	}
	r.cacheIdx, r.cache = i, out
	return out, nil
}

// Size is the size of the WAV file.
func (r *sealedReader) Size() int64 { return r.size }

// Read reads the WAV file from the current offset.
func (r *sealedReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && r.off < r.size {
		if r.off < int64(len(r.header)) {
			k := copy(p[n:], r.header[r.off:])
			n += k
			r.off += int64(k)
			continue
		}
		pos := r.off - int64(len(r.header))
		c, err := r.load(pos / r.chunk)
		if err != nil {
			return n, err
		}
		k := copy(p[n:], c[pos%r.chunk:])
		n += k
		r.off += int64(k)
	}
	return n, nil
}

// Seek sets the offset for the next Read.
func (r *sealedReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("recording: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("recording: negative offset")
	}
	r.off = offset
	return offset, nil
}

// plainWriter is a WAV file whose header sizes are rewritten at each
// checkpoint.
type plainWriter struct{ w *wav.Writer }

func newPlainWriter(f *os.File) (*plainWriter, error) {
	w, err := wav.NewWriter(f, rate, channels)
	if err != nil {
		return nil, err
	}
	return &plainWriter{w}, nil
}

func (p *plainWriter) Write(b []byte) error { return p.w.WriteRaw(b) }
func (p *plainWriter) Checkpoint() error    { return p.w.Checkpoint() }
func (p *plainWriter) Close() error         { return p.w.Close() }
func (p *plainWriter) Bytes() int64         { return p.w.Bytes() }
