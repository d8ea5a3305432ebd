package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"switchboard/media"
	"switchboard/media/wav"
)

// maxRecordLag is how far (in samples) the recording may fall behind the
// wall clock before silence is inserted: 100 ms.
const maxRecordLag = media.ClockRate / 10

// recorder writes the received audio of `switchboard dial --record` to an
// 8 kHz mono WAV file. The recording starts at the answer: the time before
// the first packet is written as silence, so offsets in the file are
// offsets from the answer (and from the start of --play).
type recorder struct {
	f       *os.File
	w       *wav.Writer
	start   time.Time
	written int // samples
	err     error
	closed  bool
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	w, err := wav.NewWriter(f, media.ClockRate, 1)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("--record: %w", err), f.Close())
	}
	return &recorder{f: f, w: w, start: time.Now()}, nil
}

// onAudio listens to the session's audio at 8 kHz (media goroutine). The file
// follows the wall clock from the answer: silence stands for the time
// before the first packet and for stalls of the media loop longer than
// maxRecordLag (frames the session skipped), so offsets in the file stay
// offsets from the answer.
func (r *recorder) onAudio(pcm []int16) {
	if r.err != nil {
		return
	}
	due := int(time.Since(r.start) * media.ClockRate / time.Second)
	if gap := due - r.written - len(pcm); gap > 0 && (r.written == 0 || gap > maxRecordLag) {
		r.err = r.w.Write(make([]int16, gap))
		r.written += gap
	}
	if r.err == nil {
		r.err = r.w.Write(pcm)
		r.written += len(pcm)
	}
}

// Duration returns how much audio was written.
func (r *recorder) Duration() time.Duration { return r.w.Duration() }

// Close fixes the WAV header and closes the file. Call it after the
// session is closed. Idempotent.
func (r *recorder) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := errors.Join(r.err, r.w.Close(), r.f.Close())
	if err != nil {
		return fmt.Errorf("--record %s: %w", r.f.Name(), err)
	}
	return nil
}
