package conversation

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/media"
)

// speechFrames is 20 ms frames of a loud 440 Hz tone at rate, as PCM16LE,
// except the frames listed in quiet, which are silence.
func speechFrames(rate, n int, quiet map[int]bool) [][]byte {
	per := rate / 50
	out := make([][]byte, n)
	for f := range n {
		pcm := make([]int16, per)
		if !quiet[f] {
			for i := range pcm {
				pcm[i] = int16(12000 * math.Sin(2*math.Pi*440*float64(f*per+i)/float64(rate)))
			}
		}
		out[f] = media.AppendPCM16LE(nil, pcm)
	}
	return out
}

// TestTurnAudioKeepsG711 keeps what the STT fallback needs of a turn in
// 8 kHz G.711, whatever the conversation speaks: a G.711 conversation's
// bytes as they came, PCM16 (24 kHz, 8 kHz) µ-law coded at 8 kHz (8 KB a
// second, not 48), with the last 500 ms before speech_started.
func TestTurnAudioKeepsG711(t *testing.T) {
	t.Run("pcma as it came", func(t *testing.T) {
		ta := newTurnAudio(media.FormatPCMA, 8000, 10*time.Second)
		require.Nil(t, ta.stop(), "no turn open")
		for i := range 100 { // 2 s before the turn: only the pre-roll is kept
			ta.add(bytes.Repeat([]byte{byte(i)}, 160))
		}
		require.Equal(t, 4000, cap(ta.pre), "the pre-roll's ring is the pre-roll, no more")
		ta.start()
		ta.start() // a second speech_started keeps the turn
		ta.add(bytes.Repeat([]byte{200}, 160))
		got := ta.stop()
		require.Len(t, got, 4000+160)
		require.Equal(t, byte(75), got[0], "the pre-roll is the last 25 frames")
		require.Equal(t, byte(200), got[len(got)-1])
		require.Equal(t, media.PCMA, ta.codec)
	})
	t.Run("the ring wraps mid-frame and keeps the order", func(t *testing.T) {
		for _, frame := range []int{160, 480, 3999, 4000, 4001, 9000} {
			ta := newTurnAudio(media.FormatPCMU, 8000, 10*time.Second)
			var all []byte
			for i := range 4000/frame + 3 {
				f := make([]byte, frame)
				for j := range f {
					f[j] = byte(len(all)+j) ^ byte(i)
				}
				all = append(all, f...)
				ta.add(f)
			}
			ta.start()
			require.Equal(t, all[len(all)-4000:], ta.stop(), "frames of %d bytes", frame)
		}
		ta := newTurnAudio(media.FormatPCMU, 8000, 10*time.Second)
		ta.add([]byte{1, 2, 3})
		ta.start()
		require.Equal(t, []byte{1, 2, 3}, ta.stop(), "less than the pre-roll: all of it")
	})
	for _, tc := range []struct {
		rate, legRate, kept int
	}{
		{24000, 8000, 8000},   // a telephone caller, widened for the model
		{24000, 0, 16000},     // a caller of unknown bandwidth: the recognizer's rate
		{24000, 24000, 16000}, // a wideband (Opus) caller: the recognizer's rate
		{24000, 16000, 16000}, // G.722
		{8000, 0, 8000},
	} {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			ta := newTurnAudio(media.PCM16(tc.rate), tc.legRate, 10*time.Second)
			frames := speechFrames(tc.rate, 100, nil)
			ta.start()
			for _, f := range frames {
				ta.add(f)
			}
			got := ta.stop()
			require.Equal(t, tc.kept, ta.rate)
			require.Len(t, got, 100*tc.kept/50, "a byte a sample")
			require.Equal(t, 2*time.Second, ta.duration(got))
			// The tone survives: its level once decoded is the input's
			// (12000 peak: RMS 8485), after the resampler's first frame.
			pcm := media.PCMU.DecodeFrame(nil, got[tc.kept/10:])
			require.InDelta(t, 8485, media.RMS(pcm), 300)
		})
	}
}

// TestTurnAudioPieces: a turn longer than a piece is cut at the quietest
// 20 ms of the piece's last second, the pieces wait for takeCut, and the
// pieces and the rest given by stop are the whole turn, nothing lost or
// repeated; the recorder's buffer never holds more than a piece and the
// searched second, however long the caller speaks.
func TestTurnAudioPieces(t *testing.T) {
	ta := newTurnAudio(media.FormatPCMU, 8000, 2*time.Second)
	// 20 ms frames, each filled with its own index as a loud µ-law code,
	// but frame 80 (at 1.6 s: in the last second of the first piece) and
	// frame 170 quiet (0xFF: zero).
	frame := func(i int) []byte {
		if i == 80 || i == 170 {
			return bytes.Repeat([]byte{0xFF}, 160)
		}
		return bytes.Repeat([]byte{byte(i % 64)}, 160) // codes 0..63: loud
	}
	ta.start()
	var all []byte
	var pieces [][]byte
	for i := range 3000 { // 60 s
		f := frame(i)
		all = append(all, f...)
		ta.add(f)
		require.LessOrEqual(t, cap(ta.buf), 16000+8000, "a piece and the second searched for its cut")
		if i%5 == 4 { // the Run goroutine takes them every 100 ms here
			p, lost := ta.takeCut()
			require.Zero(t, lost)
			pieces = append(pieces, p...)
		}
	}
	rest := ta.stop()
	require.GreaterOrEqual(t, len(pieces), 29)
	require.Equal(t, 80*160+80, len(pieces[0]), "cut in the middle of the quiet frame")
	require.Equal(t, 90*160, len(pieces[1]), "then at the next quiet frame")
	for _, p := range pieces {
		require.LessOrEqual(t, len(p), 16000)
		require.GreaterOrEqual(t, len(p), 8000)
	}
	require.Equal(t, all, bytes.Join(append(pieces, rest), nil), "the pieces are the turn")

	// Pieces the Run goroutine does not take are bounded too; a piece
	// without a pause is cut near its end.
	ta.start()
	for range 1000 { // 20 s
		ta.add(frame(1))
	}
	p, lost := ta.takeCut()
	require.Len(t, p, maxCutPieces)
	require.Equal(t, 10-maxCutPieces, lost, "20 s in pieces of 1.99 s")
	require.InDelta(t, 16000, len(p[1]), 160, "cut within a frame of the piece's end")
}

// TestTurnAudioAddAllocs: a frame costs no allocation once the buffers
// have grown (a piece's cut allocates the next piece).
func TestTurnAudioAddAllocs(t *testing.T) {
	for _, f := range []media.Format{media.PCM16(24000), media.FormatPCMU} {
		ta := newTurnAudio(f, 8000, 10*time.Second)
		frame := speechFrames(f.Rate, 1, nil)[0]
		if f == media.FormatPCMU {
			frame = media.PCMU.EncodeFrame(nil, media.DecodePCM16LE(nil, frame))
		}
		for range 50 { // the pre-roll grows
			ta.add(frame)
		}
		require.Zero(t, testing.AllocsPerRun(100, func() { ta.add(frame) }), f.Encoding)
		ta.start()
		for range 400 { // 8 s: the turn's buffer grows
			ta.add(frame)
		}
		ta.stop()
		ta.start()
		ta.add(frame)
		require.LessOrEqual(t, testing.AllocsPerRun(10, func() { ta.add(frame) }), 0.0, f.Encoding)
	}
}

// BenchmarkTurnAudioAdd24k is the STT fallback's cost per 20 ms frame of
// a telephone caller in a 24 kHz PCM16 conversation (resample to 8 kHz,
// µ-law code, append).
func BenchmarkTurnAudioAdd24k(b *testing.B) {
	benchTurnAudio(b, media.PCM16(24000), speechFrames(24000, 1, nil)[0])
}

// BenchmarkTurnAudioAddG711 is the same for a G.711 conversation (append).
func BenchmarkTurnAudioAddG711(b *testing.B) {
	benchTurnAudio(b, media.FormatPCMU, bytes.Repeat([]byte{0x10}, 160))
}

// BenchmarkTurnAudioPreRollG711 is a G.711 frame between turns (kept as
// the next turn's pre-roll).
func BenchmarkTurnAudioPreRollG711(b *testing.B) {
	ta := newTurnAudio(media.FormatPCMU, 8000, 10*time.Second)
	frame := bytes.Repeat([]byte{0x10}, 160)
	b.ReportAllocs()
	for b.Loop() {
		ta.add(frame)
	}
}

func benchTurnAudio(b *testing.B, f media.Format, frame []byte) {
	ta := newTurnAudio(f, 8000, 10*time.Second)
	ta.start()
	b.ReportAllocs()
	for b.Loop() {
		ta.add(frame)
		if len(ta.cut) > 0 {
			ta.takeCut()
		}
	}
}
