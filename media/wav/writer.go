package wav

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"switchboard/media"
	"time"
)

// headerSize is the size of the canonical 44-byte header Writer writes.
const headerSize = 44

// maxDataSize keeps the RIFF size (data + 36) within 32 bits.
const maxDataSize = 0xFFFFFFFF - 36 - 1

var errTooLong = errors.New("wav: file would exceed 4 GiB")

// Writer writes 16-bit PCM to a WAVE file. The header is written first with
// the streaming size 0xFFFFFFFF and fixed by Close. It buffers; it is not
// safe for concurrent use.
type Writer struct {
	ws       io.WriteSeeker
	bw       *bufio.Writer
	rate     int
	channels int
	bytes    int64
	buf      []byte
	closed   bool
	err      error
}

// NewWriter writes the header to ws and returns a Writer for audio of the
// given rate and channel count.
func NewWriter(ws io.WriteSeeker, sampleRate, channels int) (*Writer, error) {
	if sampleRate <= 0 || channels < 1 || channels > 16 {
		return nil, fmt.Errorf("%w: %d Hz, %d channels", errBadFmt, sampleRate, channels)
	}
	w := &Writer{ws: ws, bw: bufio.NewWriterSize(ws, 32<<10), rate: sampleRate, channels: channels}
	if _, err := w.bw.Write(header(sampleRate, channels, streamingSize)); err != nil {
		return nil, fmt.Errorf("wav: write header: %w", err)
	}
	return w, nil
}

// Encode returns a whole mono 16-bit PCM WAVE file of pcm at rate (a
// file in memory: a TTS response).
func Encode(pcm []int16, rate int) []byte {
	return media.AppendPCM16LE(header(rate, 1, uint32(2*len(pcm))), pcm)
}

// Header returns the 44-byte header of a mono 16-bit PCM WAVE file whose
// data is dataSize bytes (StreamingSize: not known yet, as when
// streaming).
func Header(rate int, dataSize uint32) []byte { return header(rate, 1, dataSize) }

// StreamingSize is the data size of a file whose length is not known when
// its header is written: readers take the data to the end of the file.
const StreamingSize = streamingSize

// header returns the 44-byte header for dataSize bytes of samples.
func header(rate, channels int, dataSize uint32) []byte {
	h := make([]byte, 0, headerSize)
	riff := dataSize
	if dataSize != streamingSize {
		riff = dataSize + headerSize - 8
	}
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, riff)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, tagPCM)
	h = binary.LittleEndian.AppendUint16(h, uint16(channels))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate*channels*2))
	h = binary.LittleEndian.AppendUint16(h, uint16(channels*2))
	h = binary.LittleEndian.AppendUint16(h, 16)
	h = append(h, "data"...)
	return binary.LittleEndian.AppendUint32(h, dataSize)
}

// Write appends interleaved samples.
func (w *Writer) Write(pcm []int16) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("wav: write after close")
	}
	if w.bytes+2*int64(len(pcm)) > maxDataSize {
		w.err = errTooLong
		return w.err
	}
	w.buf = media.AppendPCM16LE(w.buf[:0], pcm)
	if _, err := w.bw.Write(w.buf); err != nil {
		w.err = fmt.Errorf("wav: write: %w", err)
		return w.err
	}
	w.bytes += int64(len(w.buf))
	return nil
}

// WriteRaw appends interleaved samples already in little-endian bytes.
func (w *Writer) WriteRaw(b []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("wav: write after close")
	}
	if w.bytes+int64(len(b)) > maxDataSize {
		w.err = errTooLong
		return w.err
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("wav: write: %w", err)
		return w.err
	}
	w.bytes += int64(len(b))
	return nil
}

// Checkpoint flushes the buffer and writes the sizes so far into the
// header, so the file is complete up to here if the process dies: a
// recording calls it every second.
func (w *Writer) Checkpoint() error {
	if w.err != nil || w.closed {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("wav: flush: %w", err)
		return w.err
	}
	if _, err := w.ws.Seek(0, io.SeekStart); err != nil {
		w.err = fmt.Errorf("wav: checkpoint header: %w", err)
		return w.err
	}
	if _, err := w.ws.Write(header(w.rate, w.channels, uint32(w.bytes))); err != nil {
		w.err = fmt.Errorf("wav: checkpoint header: %w", err)
		return w.err
	}
	if _, err := w.ws.Seek(0, io.SeekEnd); err != nil {
		w.err = fmt.Errorf("wav: checkpoint header: %w", err)
	}
	return w.err
}

// Bytes is the size of the audio data written so far.
func (w *Writer) Bytes() int64 { return w.bytes }

// HeaderSize is the size of the header Writer writes (and of a header
// made with Header).
const HeaderSize = headerSize

// HeaderFor returns the 44-byte header of a 16-bit PCM WAVE file of
// channels channels at rate whose data is dataSize bytes.
func HeaderFor(rate, channels int, dataSize uint32) []byte { return header(rate, channels, dataSize) }

// Duration returns how much audio was written.
func (w *Writer) Duration() time.Duration {
	return time.Duration(w.bytes/int64(2*w.channels)) * time.Second / time.Duration(w.rate)
}

// Close flushes the buffer and writes the final sizes into the header. It
// does not close the underlying file. Idempotent.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("wav: flush: %w", err)
		return w.err
	}
	if _, err := w.ws.Seek(0, io.SeekStart); err != nil {
		w.err = fmt.Errorf("wav: finalize header: %w", err)
		return w.err
	}
	if _, err := w.ws.Write(header(w.rate, w.channels, uint32(w.bytes))); err != nil {
		w.err = fmt.Errorf("wav: finalize header: %w", err)
		return w.err
	}
	if _, err := w.ws.Seek(0, io.SeekEnd); err != nil {
		w.err = fmt.Errorf("wav: finalize header: %w", err)
	}
	return w.err
}
