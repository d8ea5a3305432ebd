package media

import (
	"testing"
	"time"

	"github.com/pion/rtp"
)

// BenchmarkFrame* measure the per-20 ms-frame paths with 0 allocations.

func BenchmarkFrameDecodePCMU(b *testing.B) {
	payload := PCMU.EncodeFrame(nil, tone(440, 8000, 160, 8000))
	dst := make([]int16, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		dst = PCMU.DecodeFrame(dst[:0], payload)
	}
}

func BenchmarkFrameEncodePCMU(b *testing.B) {
	pcm := tone(440, 8000, 160, 8000)
	dst := make([]byte, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		dst = PCMU.EncodeFrame(dst[:0], pcm)
	}
}

func BenchmarkFrameEncodePCMA(b *testing.B) {
	pcm := tone(440, 8000, 160, 8000)
	dst := make([]byte, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		dst = PCMA.EncodeFrame(dst[:0], pcm)
	}
}

func benchResample(b *testing.B, in, out int) {
	r, err := NewResampler(in, out)
	if err != nil {
		b.Fatal(err)
	}
	src := tone(440, in, in/50, 8000)
	dst := make([]int16, 0, out/50)
	dst = r.Process(dst[:0], src)
	b.ReportAllocs()
	for b.Loop() {
		dst = r.Process(dst[:0], src)
	}
}

func BenchmarkFrameResample8to24(b *testing.B) { benchResample(b, 8000, 24000) }
func BenchmarkFrameResample24to8(b *testing.B) { benchResample(b, 24000, 8000) }
func BenchmarkFrameResample8to16(b *testing.B) { benchResample(b, 8000, 16000) }
func BenchmarkFrameResample16to8(b *testing.B) { benchResample(b, 16000, 8000) }

func BenchmarkFrameJitterPushPop(b *testing.B) {
	j, err := NewJitterBuffer(JitterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]int16, 0, 160)
	var seq uint16
	b.ReportAllocs()
	for b.Loop() {
		h, pl := benchPkt(seq)
		j.Push(h, pl)
		buf, _ = j.Pop(buf[:0])
		seq++
	}
}

type discard struct{}

func (discard) WriteRTP(*rtp.Header, []byte) error { return nil }

func BenchmarkFramePacerTick(b *testing.B) {
	q := NewPlayout()
	p, err := NewPacer(discard{}, q, PacerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pcm := make([]int16, 160)
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		q.Write("item", pcm)
		if _, err := p.Tick(now); err != nil {
			b.Fatal(err)
		}
		now = now.Add(20 * time.Millisecond)
	}
}

// BenchmarkFrameFullPath is one 20 ms frame both ways at 24 kHz: decode +
// resample up (to the model), resample down + encode (from the model).
func BenchmarkFrameFullPath(b *testing.B) {
	payload := PCMU.EncodeFrame(nil, tone(440, 8000, 160, 8000))
	up, _ := NewResampler(8000, 24000)
	down, _ := NewResampler(24000, 8000)
	pcm8 := make([]int16, 0, 160)
	pcm24 := make([]int16, 0, 480)
	back := make([]int16, 0, 160)
	enc := make([]byte, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		pcm8 = PCMU.DecodeFrame(pcm8[:0], payload)
		pcm24 = up.Process(pcm24[:0], pcm8)
		back = down.Process(back[:0], pcm24)
		enc = PCMU.EncodeFrame(enc[:0], back)
	}
}

// BenchmarkFrameListener24k is one 20 ms G.711 frame from a session to a
// 24 kHz model through a listener: decode, resample, PCM16LE.
func BenchmarkFrameListener24k(b *testing.B) {
	var out []byte
	l, _ := newListener(nil, source{codec: PCMU, rate: ClockRate, dec: "PCMU(decode)"}, PCM16(24000), func(p []byte) { out = p }, nil)
	payload := PCMU.EncodeFrame(nil, tone(440, 8000, 160, 8000))
	pcm := make([]int16, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		pcm = PCMU.DecodeFrame(pcm[:0], payload)
		l.push(payload, PCMU, pcm)
	}
	_ = out
}

// BenchmarkFrameWriter24k is one 20 ms delta of the model's 24 kHz audio
// written to a G.711 playout (resample, encode) and read by the pacer.
func BenchmarkFrameWriter24k(b *testing.B) {
	q := NewCodedPlayout(PCMU)
	w, _ := NewWriter(q, PCM16(24000), WriterOptions{})
	delta := AppendPCM16LE(nil, tone(440, 24000, 480, 8000))
	frame := make([]byte, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		w.Write("item", delta)
		frame, _ = q.ReadCoded(frame[:0], 160, PCMU)
	}
}

// BenchmarkFrameInbound24k is the "decode + resample up" figure:
// one 20 ms G.711 frame (160 bytes) decoded and resampled to 24 kHz.
func BenchmarkFrameInbound24k(b *testing.B) {
	for _, c := range []Codec{PCMU, PCMA} {
		b.Run(c.Name, func(b *testing.B) {
			payload := c.EncodeFrame(nil, tone(440, 8000, 160, 8000))
			up, err := NewResampler(8000, 24000)
			if err != nil {
				b.Fatal(err)
			}
			pcm8 := make([]int16, 0, 160)
			pcm24 := make([]int16, 0, 480)
			b.ReportAllocs()
			for b.Loop() {
				pcm8 = c.DecodeFrame(pcm8[:0], payload)
				pcm24 = up.Process(pcm24[:0], pcm8)
			}
		})
	}
}

// BenchmarkFrameOutbound24k is the "resample down + encode"
// figure: 20 ms of 24 kHz model audio (480 samples) resampled to 8 kHz and
// G.711-encoded.
func BenchmarkFrameOutbound24k(b *testing.B) {
	for _, c := range []Codec{PCMU, PCMA} {
		b.Run(c.Name, func(b *testing.B) {
			src := tone(440, 24000, 480, 8000)
			down, err := NewResampler(24000, 8000)
			if err != nil {
				b.Fatal(err)
			}
			pcm8 := make([]int16, 0, 160)
			enc := make([]byte, 0, 160)
			b.ReportAllocs()
			for b.Loop() {
				pcm8 = down.Process(pcm8[:0], src)
				enc = c.EncodeFrame(enc[:0], pcm8)
			}
		})
	}
}

// BenchmarkFrameG711Inbound and BenchmarkFrameG711Outbound set the G.711
// passthrough against the path it replaces, per 20 ms PCMU frame, for a
// consumer that speaks the caller's G.711:
//
//   - decode: the jitter buffer decodes every packet and the consumer
//     encodes the PCM again; outbound, the consumer's bytes are decoded
//     into the playout and the pacer encodes them.
//   - passthrough: the coded jitter buffer keeps the bytes; outbound the
//     coded playout queues them and the pacer sends them as they are.
//   - transcoded: passthrough after a re-INVITE to PCMA (the peer sends
//     PCMA, the consumer keeps PCMU): a table lookup per byte.
//
// Both include the real stages (Push and Pop; Write and a Pacer Tick),
// not just the codec.
func BenchmarkFrameG711Inbound(b *testing.B) {
	payload := codePattern(160)
	bench := func(b *testing.B, pt uint8, pushPop func(h *rtp.Header)) {
		h := &rtp.Header{PayloadType: pt, SSRC: 1}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			h.SequenceNumber, h.Timestamp = uint16(i), uint32(160*i)
			pushPop(h)
		}
	}
	b.Run("decode", func(b *testing.B) {
		jb, _ := NewJitterBuffer(JitterOptions{})
		pcm := make([]int16, 0, 160)
		out := make([]byte, 0, 160)
		bench(b, PayloadTypePCMU, func(h *rtp.Header) {
			jb.Push(h, payload)
			pcm, _ = jb.Pop(pcm[:0])
			out = PCMU.EncodeFrame(out[:0], pcm)
		})
	})
	for _, tc := range []struct {
		name string
		pt   uint8
	}{{"passthrough", PayloadTypePCMU}, {"transcoded", PayloadTypePCMA}} {
		b.Run(tc.name, func(b *testing.B) {
			jb, _ := NewCodedJitterBuffer(PCMU, JitterOptions{})
			out := make([]byte, 0, 160)
			bench(b, tc.pt, func(h *rtp.Header) {
				jb.Push(h, payload)
				out, _ = jb.Pop(out[:0])
			})
		})
	}
}

func BenchmarkFrameG711Outbound(b *testing.B) {
	payload := codePattern(160)
	bench := func(b *testing.B, q *Playout, wire Codec, write func()) {
		p, err := NewPacer(discard{}, q, PacerOptions{Codec: wire})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Unix(0, 0)
		b.ReportAllocs()
		for b.Loop() {
			write()
			if _, err := p.Tick(now); err != nil {
				b.Fatal(err)
			}
			now = now.Add(20 * time.Millisecond)
		}
	}
	b.Run("decode", func(b *testing.B) {
		q := NewPlayout()
		pcm := make([]int16, 0, 160)
		bench(b, q, PCMU, func() {
			pcm = PCMU.DecodeFrame(pcm[:0], payload)
			q.Write("item", pcm)
		})
	})
	for _, tc := range []struct {
		name string
		wire Codec
	}{{"passthrough", PCMU}, {"transcoded", PCMA}} {
		b.Run(tc.name, func(b *testing.B) {
			q := NewCodedPlayout(PCMU)
			bench(b, q, tc.wire, func() { q.WriteCoded("item", PCMU, payload) })
		})
	}
}

// codePattern returns n G.711 code words that vary like speech bytes do.
func codePattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

// BenchmarkBridgeFrame is one 20 ms frame of a bridge's caller → human
// direction, from the caller's code words to the packet sent the human:
// the listener on the caller's session, the relay writer into the
// human's playout, and the human's pacer. The human's leg is a placed
// one (deferred: PCM at the call's 24 kHz until its answer). Before its
// G.711 answer changed the session's form ("pcm24k", as every placed
// leg was before): decode, resample 8k→24k, queue PCM, resample 24k→8k,
// encode. After ("relay"): the code words queued and sent as they are;
// a caller of the other law ("transcode") goes through the table once.
func BenchmarkBridgeFrame(b *testing.B) {
	for _, tc := range []struct {
		name   string
		caller Codec
		coded  bool
	}{{"pcm24k", PCMU, false}, {"relay", PCMU, true}, {"transcode", PCMA, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var q *Playout
			var opts PacerOptions
			f := FormatPCMU
			if tc.coded {
				q, opts = NewCodedPlayout(PCMU), PacerOptions{Codec: PCMU}
			} else {
				_, enc, err := wireCoders(PCMU, 24000, EncoderOptions{})
				if err != nil {
					b.Fatal(err)
				}
				we := &wireEncoder{rate: 24000}
				if err := we.set(enc); err != nil {
					b.Fatal(err)
				}
				q, opts, f = NewPlayoutAt(24000), PacerOptions{Codec: PCMU, Encoder: we}, PCM16(24000)
			}
			w, err := NewWriter(q, f, WriterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			l, err := newListener(nil, source{codec: tc.caller, rate: ClockRate, dec: tc.caller.Name + "(decode)"}, f,
				func(p []byte) { w.Write("relay", p) }, nil)
			if err != nil {
				b.Fatal(err)
			}
			p, err := NewPacer(discard{}, q, opts)
			if err != nil {
				b.Fatal(err)
			}
			payload := tc.caller.EncodeFrame(nil, tone(440, 8000, 160, 8000))
			pcm := make([]int16, 0, 160)
			now := time.Unix(0, 0)
			if testing.Verbose() {
				b.Logf("%s | %s -> %s", l, w, p)
			}
			b.ReportAllocs()
			for b.Loop() {
				var dec []int16
				if l.needsPCM() {
					pcm = tc.caller.DecodeFrame(pcm[:0], payload) // the session decodes once for its listeners
					dec = pcm
				}
				l.push(payload, tc.caller, dec)
				if _, err := p.Tick(now); err != nil {
					b.Fatal(err)
				}
				now = now.Add(20 * time.Millisecond)
			}
		})
	}
}
