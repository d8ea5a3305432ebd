package recording

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/media"
	"switchboard/media/wav"
)

type fakePhone struct {
	call.Phone
	id string
}

func (p fakePhone) ID() string             { return p.id }
func (p fakePhone) Logger() zerolog.Logger { return zerolog.Nop() }
func (p fakePhone) Route() call.Route      { return call.Route{} }

func tone(freq float64, n, off int) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(8000 * math.Sin(2*math.Pi*freq*float64(i+off)/8000))
	}
	return out
}

// record feeds 3 s of frames: the caller (PCM) speaks 440 Hz for the
// first second, the agent (PCMU on the wire) 1000 Hz from 1.5 s on. It
// runs in a synctest bubble: every 50 frames it waits until the writer
// has taken all it was given (blocked on its queue again), as a call's
// 20 ms pace would let it, so no frame is dropped for a full queue.
func record(t *testing.T, s *Service, id string, redact bool) {
	t.Helper()
	rec, err := s.Start(fakePhone{id: id}, redact)
	require.NoError(t, err)
	t0 := time.Now()
	var silent [160]int16
	for i := range 150 {
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		in := silent[:]
		if i < 50 {
			in = tone(440, 160, i*160)
		}
		rec.Inbound(media.Frame{At: at, Samples: 160, PCM: in, Status: media.FramePlayed})
		out := media.Frame{At: at, Samples: 160, Codec: media.PCMU, Coded: media.PCMU.EncodeFrame(nil, silent[:])}
		if i >= 75 {
			out.Coded, out.Speech = media.PCMU.EncodeFrame(nil, tone(1000, 160, i*160)), true
		}
		rec.Outbound(out)
		if redact && i == 25 { // a key at 0.5 s
			rec.Redact(at.Add(-100*time.Millisecond), at.Add(100*time.Millisecond))
		}
		if i%50 == 49 {
			synctest.Wait()
		}
	}
	require.NoError(t, rec.Close())
}

func energy(s []int16) float64 {
	var e float64
	for _, v := range s {
		e += float64(v) * float64(v)
	}
	return e / float64(max(len(s), 1))
}

func channel(a *wav.Audio, ch, from, to int) []int16 {
	out := make([]int16, 0, to-from)
	for i := from; i < to && i < a.Frames(); i++ {
		out = append(out, a.Samples[i*2+ch])
	}
	return out
}

func checkStereo(t *testing.T, a *wav.Audio, redacted bool) {
	t.Helper()
	require.Equal(t, 2, a.Channels)
	require.Equal(t, 8000, a.SampleRate)
	require.InDelta(t, 3*8000, a.Frames(), 160)
	require.Greater(t, energy(channel(a, 0, 0, 3000)), 1e6, "caller speaks in the first second, left")
	require.Less(t, energy(channel(a, 1, 0, 8000)), 1e3, "the agent is silent in the first second, right")
	require.Less(t, energy(channel(a, 0, 13000, 24000)), 1e3, "the caller is silent after 1.6 s, left")
	require.Greater(t, energy(channel(a, 1, 13000, 24000)), 1e6, "the agent speaks after 1.5 s, right")
	if redacted {
		require.Zero(t, energy(channel(a, 0, 3400, 4600)), "the redacted key window is silent")
	} else {
		require.Greater(t, energy(channel(a, 0, 3400, 4600)), 1e6)
	}
}

func TestRecordingPlainStereoAligned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Options{Dir: t.TempDir()})
		require.NoError(t, err)
		id := uuid.NewString()
		record(t, s, id, false)
		a, err := wav.ReadFile(filepath.Join(s.opts.Dir, id+".wav"))
		require.NoError(t, err)
		checkStereo(t, a, false)
	})
}

func TestRecordingRedactsKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Options{Dir: t.TempDir()})
		require.NoError(t, err)
		id := uuid.NewString()
		record(t, s, id, true)
		f, err := s.Open(id)
		require.NoError(t, err)
		defer f.Close()
		a, err := wav.Decode(f)
		require.NoError(t, err)
		checkStereo(t, a, true)
	})
}

func TestRecordingSealedRangesAndTornChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		key := bytes.Repeat([]byte{7}, 32)
		s, err := New(Options{Dir: dir, Key: key})
		require.NoError(t, err)
		id := uuid.NewString()
		record(t, s, id, false)
		raw, err := os.ReadFile(filepath.Join(dir, id+sealedExt))
		require.NoError(t, err)
		require.NotContains(t, string(raw), "RIFF", "a sealed file has no plaintext header")

		f, err := s.Open(id)
		require.NoError(t, err)
		whole, err := io.ReadAll(f)
		require.NoError(t, err)
		f.Close()
		a, err := wav.Decode(bytes.NewReader(whole))
		require.NoError(t, err)
		checkStereo(t, a, false)

		// Range requests through http.ServeContent decrypt only what they need.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f, err := s.Open(id)
			require.NoError(t, err)
			defer f.Close()
			http.ServeContent(w, r, "x.wav", f.ModTime, f)
		}))
		defer srv.Close()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Range", "bytes=31990-64010")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		part, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.Equal(t, whole[31990:64011], part)

		// Another key does not open it.
		other, err := New(Options{Dir: dir, Key: bytes.Repeat([]byte{8}, 32)})
		require.NoError(t, err)
		_, err = other.Open(id)
		require.Error(t, err)

		// A crash that tore the last chunk leaves the chunks before it.
		require.NoError(t, os.WriteFile(filepath.Join(dir, id+sealedExt), raw[:len(raw)-100], 0o600))
		f, err = s.Open(id)
		require.NoError(t, err)
		torn, err := io.ReadAll(f)
		f.Close()
		require.NoError(t, err)
		require.Equal(t, whole[44:44+2*chunkSize], torn[44:])
	})
}

func TestRecordingDeleteAndRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		s, err := New(Options{Dir: dir, Retention: time.Hour})
		require.NoError(t, err)
		a, b := uuid.NewString(), uuid.NewString()
		record(t, s, a, false)
		record(t, s, b, false)
		require.NoError(t, s.Delete(a))
		require.ErrorIs(t, s.Delete(a), ErrNotFound)
		require.ErrorIs(t, s.Delete("../etc/passwd"), ErrNotFound)
		// The bubble's clock is not the file system's: the sweep's now is
		// the time b was last written.
		fi, err := os.Stat(filepath.Join(dir, b+".wav"))
		require.NoError(t, err)
		s.Sweep(fi.ModTime())
		require.True(t, s.Exists(b))
		s.Sweep(fi.ModTime().Add(2 * time.Hour))
		require.False(t, s.Exists(b))
	})
}

// BenchmarkRecordingTap is the per-frame cost of a recording on the media
// goroutine (both directions): a copy into the queue, no allocation. The
// queue is drained by a goroutine that drops the frames, so the figure
// (and the memory) is the tap's alone, not the writer's.
func BenchmarkRecordingTap(b *testing.B) {
	s, err := New(Options{Dir: b.TempDir()})
	require.NoError(b, err)
	rec := &Recording{svc: s, q: make(chan qframe, queueLen)}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range rec.q {
		}
	}()
	defer func() { close(rec.q); <-drained }()
	pcm := tone(440, 160, 0)
	coded := media.PCMU.EncodeFrame(nil, pcm)
	t0 := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		rec.Inbound(media.Frame{At: at, Samples: 160, PCM: pcm, Status: media.FramePlayed})
		rec.Outbound(media.Frame{At: at, Samples: 160, Coded: coded, Codec: media.PCMU, Speech: true})
	}
}

func TestRecordingTapDoesNotAllocate(t *testing.T) {
	res := testing.Benchmark(BenchmarkRecordingTap)
	require.Zero(t, res.AllocsPerOp(), "the recording tap allocates on the media goroutine")
}
