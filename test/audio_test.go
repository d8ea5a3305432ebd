package test

import (
	bin "encoding/binary"
	"math"
	"os"
	"slices"

	"switchboard/media"
	"switchboard/media/wav"
	"switchboard/test/pcap"
)

// readPcapG711 decodes the RTP payloads of a capture (G.711) into 8 kHz
// PCM, in capture order.
func readPcapG711(path string) ([]int16, error) {
	pkts, err := pcap.ReadRTP(path)
	if err != nil {
		return nil, err
	}
	var pcm []int16
	for _, p := range pkts {
		if codec, ok := media.CodecByPayloadType(p.RTP.PayloadType); ok {
			pcm = codec.DecodeFrame(pcm, p.RTP.Payload)
		}
	}
	return pcm, nil
}

// readWAV reads a 16-bit PCM WAV file (its first channel's mix) and
// returns its samples and rate.
func readWAV(path string) ([]int16, int, error) {
	a, err := wav.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	return a.Mono(), a.SampleRate, nil
}

// wavClosed reports whether the WAV file at path was finalized: its RIFF
// header counts every byte of the file (a writer fills it in at close).
func wavClosed(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil || len(b) <= 44 || string(b[:4]) != "RIFF" {
		return false
	}
	return int(bin.LittleEndian.Uint32(b[4:8]))+8 == len(b)
}

// envelope is the RMS of each block of n samples.
func envelope(pcm []int16, n int) []float64 {
	out := make([]float64, 0, len(pcm)/n)
	for i := 0; i+n <= len(pcm); i += n {
		var e float64
		for _, s := range pcm[i : i+n] {
			e += float64(s) * float64(s)
		}
		out = append(out, math.Sqrt(e/float64(n)))
	}
	return out
}

// ncc is the normalised cross-correlation of ref and got[lag:], over
// their overlap (the Pearson coefficient when centred is set).
func ncc(ref, got []float64, lag int, centred bool) float64 {
	if lag < 0 || lag >= len(got) {
		return 0
	}
	g := got[lag:]
	n := min(len(ref), len(g))
	if n == 0 {
		return 0
	}
	var mr, mg float64
	if centred {
		for i := range n {
			mr += ref[i]
			mg += g[i]
		}
		mr, mg = mr/float64(n), mg/float64(n)
	}
	var xy, xx, yy float64
	for i := range n {
		x, y := ref[i]-mr, g[i]-mg
		xy += x * y
		xx += x * x
		yy += y * y
	}
	if xx == 0 || yy == 0 {
		return 0
	}
	return xy / math.Sqrt(xx*yy)
}

// echoMatch finds where ref (8 kHz) appears in got (8 kHz): a coarse
// search on 10 ms envelopes over lags [minLag, maxLag] samples, refined on
// the waveform within ±20 ms. It returns the lag in samples, the envelope
// correlation and the waveform correlation at that lag.
func echoMatch(ref, got []int16, minLag, maxLag int) (lag int, envCorr, waveCorr float64) {
	const block = 80 // 10 ms
	er, eg := envelope(ref, block), envelope(got, block)
	best := minLag / block
	envCorr = -1
	for l := minLag / block; l <= maxLag/block; l++ {
		if c := ncc(er, eg, l, true); c > envCorr {
			envCorr, best = c, l
		}
	}
	fr, fg := toFloat(ref), toFloat(got)
	waveCorr = -1
	for l := max(0, best*block-160); l <= best*block+160; l++ {
		if c := ncc(fr, fg, l, false); c > waveCorr {
			waveCorr, lag = c, l
		}
	}
	return lag, envCorr, waveCorr
}

func toFloat(pcm []int16) []float64 {
	out := make([]float64, len(pcm))
	for i, s := range pcm {
		out[i] = float64(s)
	}
	return out
}

// streamPCM lays the packets' audio out on their RTP timestamps (gaps are
// silence), from the first packet on.
func streamPCM(pkts []rtpPacket) []int16 {
	if len(pkts) == 0 {
		return nil
	}
	base := pkts[0].hdr.Timestamp
	var out []int16
	for _, p := range pkts {
		off := int(int32(p.hdr.Timestamp - base))
		if off < 0 || off > 8000*600 {
			continue
		}
		if need := off + len(p.pcm); need > len(out) {
			out = append(out, make([]int16, need-len(out))...)
		}
		copy(out[off:], p.pcm)
	}
	return out
}

// echoWindows matches ref against got window by window (250 ms windows of
// ref that hold speech), each with its own lag within [minLag, maxLag]
// samples, so that a timing shift in the middle of a call (a jitter buffer
// resync, frames skipped by a late pacer on a loaded machine) spoils only
// the window it falls in. It returns the number of speech windows, the
// number that matched with a waveform correlation above minCorr, and the
// median lag of the matched ones.
func echoWindows(ref, got []int16, minLag, maxLag int, minCorr float64) (windows, matched, medianLag int) {
	const win = 2000
	var peak float64
	for _, e := range envelope(ref, win) {
		peak = max(peak, e)
	}
	var lags []int
	for off := 0; off+win <= len(ref); off += win {
		w := ref[off : off+win]
		if envelope(w, win)[0] < peak/4 {
			continue // silence or a quiet tail
		}
		windows++
		lo, hi := off+minLag, min(off+maxLag, len(got)-win)
		if hi < lo {
			continue
		}
		lag, _, c := echoMatch(w, got[lo:min(len(got), hi+win)], 0, hi-lo)
		if c > minCorr {
			matched++
			lags = append(lags, minLag+lag)
		}
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		medianLag = lags[len(lags)/2]
	}
	return windows, matched, medianLag
}
