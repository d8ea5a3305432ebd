package conversation

import (
	"sync"
	"time"

	"switchboard/media"
)

// turnAudio records the caller's audio from speech_started to
// speech_stopped for the STT fallback, compact: as µ-law (a G.711
// conversation's bytes as they came) at the rate the caller's audio
// carries, 8 kHz for a telephone caller (whose audio was G.711 before it
// was widened to 24 kHz PCM16 for the model) and 16 kHz at most for a
// wideband one (the local recognizer's rate). A second of a telephone
// caller costs 8 KB instead of the 48 KB of 24 kHz PCM16.
//
// A turn is kept in pieces of at most piece: once the turn reaches it, the
// audio up to the quietest 20 ms of its last second is cut off and waits
// in cut for the Run goroutine (takeCut), so a caller who never pauses
// costs one piece, not the whole monologue. add runs on the media
// goroutine; start, stop and takeCut on the Run goroutine.
type turnAudio struct {
	codec media.Codec // the law kept
	rate  int         // the rate kept
	// rs, pcm, down and g turn a PCM16 conversation's frames (at inRate)
	// into codec at rate (rs nil: the same rate, or one the resampler
	// cannot do).
	rs         *media.Resampler
	inRate     int
	pcm, down  []int16
	g          []byte
	g711       bool // the conversation speaks codec: its bytes are kept as they are
	preMax     int  // bytes of pre-roll
	pieceBytes int
	quietBytes int // the span before a cut that is searched for a pause

	mu sync.Mutex
	// pre is a ring of the last preMax bytes while no turn is open (the
	// pre-roll): preAt is where the next byte goes, preFull that it wrapped.
	pre     []byte
	preAt   int
	preFull bool
	on      bool
	buf     []byte
	cut     [][]byte // pieces of the open turn, oldest first
	// cutLost counts pieces dropped because the Run goroutine did not take
	// them (maxCutPieces were waiting).
	cutLost int
}

// maxTurnRate is the highest rate turnAudio keeps: the local recognizer's
// (pocketsphinx's model is a 16 kHz one).
const maxTurnRate = 16000

// maxCutPieces is how many cut pieces may wait for the Run goroutine (it
// takes them every tick: only a stalled Run goroutine leaves more).
const maxCutPieces = 2

// newTurnAudio records a conversation's audio in format f from a caller
// whose audio has legRate (0: unknown), cut in pieces of at most piece
// (at least 2 s).
func newTurnAudio(f media.Format, legRate int, piece time.Duration) *turnAudio {
	t := &turnAudio{codec: media.PCMU, rate: media.ClockRate, inRate: f.Rate}
	switch f {
	case media.FormatPCMA:
		t.codec, t.g711 = media.PCMA, true
	case media.FormatPCMU:
		t.g711 = true
	default:
		t.rate = min(f.Rate, maxTurnRate)
		if legRate > 0 {
			t.rate = min(t.rate, max(legRate, media.ClockRate))
		}
		if f.Rate != t.rate {
			// Rates the resampler cannot do fall back to media.Convert.
			t.rs, _ = media.NewResampler(f.Rate, t.rate)
		}
	}
	bytes := func(d time.Duration) int { return int(int64(t.rate) * int64(d) / int64(time.Second)) }
	t.preMax = bytes(turnPreRoll)
	t.pieceBytes = bytes(max(piece, 2*time.Second))
	t.quietBytes = bytes(time.Second)
	return t
}

// duration is how long b, audio the recorder handed out, lasts.
func (t *turnAudio) duration(b []byte) time.Duration {
	return time.Duration(len(b)) * time.Second / time.Duration(t.rate)
}

// add takes one frame of the caller's audio in the conversation's format;
// it never blocks for long and, once its buffers have grown, allocates
// only when a piece is cut.
func (t *turnAudio) add(frame []byte) {
	g := frame
	if !t.g711 {
		t.pcm = media.DecodePCM16LE(t.pcm[:0], frame)
		s := t.pcm
		switch {
		case t.rs != nil:
			t.down = t.rs.Process(t.down[:0], s)
			s = t.down
		case t.inRate != t.rate:
			s = media.Convert(s, t.inRate, t.rate)
		}
		t.g = t.codec.EncodeFrame(t.g[:0], s)
		g = t.g
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		t.keepPre(g)
		return
	}
	t.buf = appendBounded(t.buf, g, t.pieceBytes+t.quietBytes)
	if len(t.buf) >= t.pieceBytes {
		t.cutPiece()
	}
}

// appendBounded appends g to dst, growing dst's array by doubling up to
// limit bytes and never past it (or past what g needs).
func appendBounded(dst, g []byte, limit int) []byte {
	if cap(dst)-len(dst) < len(g) {
		nb := make([]byte, len(dst), max(min(2*cap(dst), limit), len(dst)+len(g), 1024))
		copy(nb, dst)
		dst = nb
	}
	return append(dst, g...)
}

// cutPiece moves the open turn's audio up to the quietest 20 ms of its
// last second into cut (t.mu held), so a word is rarely split.
func (t *turnAudio) cutPiece() {
	at := quietest(t.codec, t.rate, t.buf, len(t.buf)-t.quietBytes)
	piece := t.buf[:at] // its cap is the array it holds: the backlog counts that
	// The turn is a long one: the next piece gets its whole array at once.
	t.buf = append(make([]byte, 0, t.pieceBytes+t.quietBytes), t.buf[at:]...)
	if len(t.cut) == maxCutPieces {
		t.cut = append(t.cut[:0], t.cut[1:]...)
		t.cutLost++
	}
	t.cut = append(t.cut, piece)
}

// quietest returns the middle of the 20 ms window of b[from:] with the
// least energy (the sum of its samples' magnitudes, read from the code
// words without decoding), stepping 10 ms, the latest of equals (a piece
// without a pause is cut near its end); len(b) when b[from:] is shorter
// than a window.
func quietest(c media.Codec, rate int, b []byte, from int) int {
	win, step := rate/50, rate/100
	mag := media.Magnitudes(c)
	from = max(from, 0)
	best, at := -1, len(b)
	for i := from; i+win <= len(b); i += step {
		sum := 0
		for _, x := range b[i : i+win] {
			sum += int(mag[x])
		}
		if best < 0 || sum <= best {
			best, at = sum, i+win/2
		}
	}
	return at
}

// start opens a turn with the pre-roll (a turn already open goes on).
func (t *turnAudio) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on {
		return
	}
	t.on = true
	n := t.preAt
	if t.preFull {
		n = len(t.pre)
	}
	t.buf = t.appendPreRoll(make([]byte, 0, max(2*n, 1024)))
	t.preAt, t.preFull = 0, false
}

// keepPre writes g into the pre-roll's ring (t.mu held); its array is
// made at the first frame, once.
func (t *turnAudio) keepPre(g []byte) {
	if t.pre == nil {
		t.pre = make([]byte, t.preMax)
	}
	if len(g) >= len(t.pre) {
		copy(t.pre, g[len(g)-len(t.pre):])
		t.preAt, t.preFull = 0, true
		return
	}
	n := copy(t.pre[t.preAt:], g)
	if n < len(g) {
		t.preFull = true
		n = copy(t.pre, g[n:])
		t.preAt = n
		return
	}
	t.preAt += n
	if t.preAt == len(t.pre) {
		t.preAt, t.preFull = 0, true
	}
}

// appendPreRoll appends the pre-roll, the last turnPreRoll of the audio
// before the turn, oldest first (t.mu held).
func (t *turnAudio) appendPreRoll(dst []byte) []byte {
	if t.preFull {
		dst = append(dst, t.pre[t.preAt:]...)
	}
	return append(dst, t.pre[:t.preAt]...)
}

// takeCut returns the pieces cut off the open turn since the last call,
// and how many were lost meanwhile.
func (t *turnAudio) takeCut() (pieces [][]byte, lost int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.cut) == 0 && t.cutLost == 0 {
		return nil, 0
	}
	pieces, lost = append([][]byte(nil), t.cut...), t.cutLost
	clear(t.cut)
	t.cut, t.cutLost = t.cut[:0], 0
	return pieces, lost
}

// stop closes the turn and returns the rest of its audio (nil when none
// was open); pieces cut before stay for takeCut.
func (t *turnAudio) stop() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return nil
	}
	t.on = false
	b := t.buf
	t.buf = nil
	return b
}
