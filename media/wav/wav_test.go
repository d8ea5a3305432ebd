package wav

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func sine(n, rate, channels int, hz float64) []int16 {
	s := make([]int16, n*channels)
	for i := range n {
		for c := range channels {
			s[i*channels+c] = int16(8000 * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)) * float64(c+1) / float64(channels))
		}
	}
	return s
}

func writeFile(t *testing.T, rate, channels int, pcm []int16, finalize bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "a.wav")
	f, err := os.Create(p)
	require.NoError(t, err)
	w, err := NewWriter(f, rate, channels)
	require.NoError(t, err)
	require.NoError(t, w.Write(pcm[:len(pcm)/2]))
	require.NoError(t, w.Write(pcm[len(pcm)/2:]))
	if finalize {
		require.NoError(t, w.Close())
		require.NoError(t, w.Close(), "idempotent")
		require.Error(t, w.Write(pcm), "write after close")
	} else {
		require.NoError(t, w.bw.Flush()) // as if the process died after a flush
	}
	require.NoError(t, f.Close())
	return p
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name           string
		rate, channels int
		finalize       bool
	}{
		{"8k mono", 8000, 1, true},
		{"48k stereo", 48000, 2, true},
		{"interrupted before close", 8000, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcm := sine(4000, tc.rate, tc.channels, 440)
			p := writeFile(t, tc.rate, tc.channels, pcm, tc.finalize)
			a, err := ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, tc.rate, a.SampleRate)
			require.Equal(t, tc.channels, a.Channels)
			require.Equal(t, pcm, a.Samples)
			require.Equal(t, 4000, a.Frames())
			require.Equal(t, time.Duration(4000)*time.Second/time.Duration(tc.rate), a.Duration())
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			want := uint32(2 * len(pcm))
			if !tc.finalize {
				want = streamingSize
			}
			require.Equal(t, want, binary.LittleEndian.Uint32(raw[40:]))
		})
	}
}

func TestMonoDownmix(t *testing.T) {
	a := &Audio{SampleRate: 8000, Channels: 2, Samples: []int16{100, 300, -32768, -32768, 32767, 32767, 1, -1}}
	require.Equal(t, []int16{200, -32768, 32767, 0}, a.Mono())
	m := &Audio{SampleRate: 8000, Channels: 1, Samples: []int16{1, 2}}
	require.Equal(t, []int16{1, 2}, m.Mono())
}

// TestSoxFiles decodes what the usual tools write.
func TestSoxFiles(t *testing.T) {
	sox, err := exec.LookPath("sox")
	require.NoError(t, err, "sox is required for this test")
	dir := t.TempDir()
	gen := func(name string, args ...string) string {
		p := filepath.Join(dir, name)
		cmd := exec.Command(sox, append(append([]string{"-n"}, args...), p, "synth", "0.25", "sine", "440")...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return p
	}
	for _, tc := range []struct {
		name           string
		args           []string
		rate, channels int
		err            string
	}{
		{"16k stereo", []string{"-r", "16000", "-c", "2", "-b", "16"}, 16000, 2, ""},
		{"extensible 3 channels", []string{"-r", "24000", "-c", "3", "-b", "16"}, 24000, 3, ""},
		{"float", []string{"-r", "8000", "-c", "1", "-e", "floating-point", "-b", "32"}, 0, 0, "32-bit IEEE float"},
		{"8-bit", []string{"-r", "8000", "-c", "1", "-b", "8"}, 0, 0, "8-bit PCM"},
		{"24-bit", []string{"-r", "8000", "-c", "1", "-b", "24"}, 0, 0, "24-bit PCM"},
		{"mu-law", []string{"-r", "8000", "-c", "1", "-e", "mu-law"}, 0, 0, "mu-law"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadFile(gen(tc.name+".wav", tc.args...))
			if tc.err != "" {
				require.ErrorIs(t, err, ErrUnsupported)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.rate, a.SampleRate)
			require.Equal(t, tc.channels, a.Channels)
			require.Equal(t, tc.rate/4, a.Frames())
		})
	}
}

// TestEspeakStreaming reads espeak-ng's pipe output, whose sizes are
// placeholders larger than the data.
func TestEspeakStreaming(t *testing.T) {
	espeak, err := exec.LookPath("espeak-ng")
	require.NoError(t, err, "espeak-ng is required for this test")
	out, err := exec.Command(espeak, "--stdout", "testing one two three").Output()
	require.NoError(t, err)
	a, err := Decode(bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, 22050, a.SampleRate)
	require.Equal(t, (len(out)-44)/2, len(a.Samples))
	require.Greater(t, a.Duration(), 500*time.Millisecond)
}

func chunk(id string, body []byte) []byte {
	b := append([]byte(id), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...)
	b = append(b, body...)
	if len(body)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func riff(chunks ...[]byte) []byte {
	body := []byte("WAVE")
	for _, c := range chunks {
		body = append(body, c...)
	}
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

func TestDecodeStructure(t *testing.T) {
	fmtPCM := header(8000, 1, 0)[12:36] // "fmt " chunk of the canonical header
	data := chunk("data", []byte{1, 0, 2, 0, 3})
	for _, tc := range []struct {
		name string
		in   []byte
		want []int16
		err  string
	}{
		{"odd LIST chunk skipped", riff(chunk("LIST", []byte("INFOabc")), fmtPCM, data), []int16{1, 2}, ""},
		{"truncated data", riff(fmtPCM, []byte("data\x10\x00\x00\x00\x05\x00\x06")), []int16{5}, ""},
		{"empty", nil, nil, "not a RIFF/WAVE"},
		{"not wave", append([]byte("RIFF\x04\x00\x00\x00AVI "), fmtPCM...), nil, "not a RIFF/WAVE"},
		{"data before fmt", riff(data, fmtPCM), nil, "no fmt chunk"},
		{"no data", riff(fmtPCM), nil, "no data chunk"},
		{"short fmt", riff(chunk("fmt ", []byte{1, 0, 1, 0}), data), nil, "malformed fmt"},
		{"zero channels", riff(chunk("fmt ", []byte{1, 0, 0, 0, 0x40, 0x1f, 0, 0, 0, 0, 0, 0, 2, 0, 16, 0}), data), nil, "0 channels"},
		{"zero rate", riff(chunk("fmt ", []byte{1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 16, 0}), data), nil, "bad sample rate"},
		{"unknown extensible", riff(chunk("fmt ", append([]byte{0xfe, 0xff, 1, 0, 0x40, 0x1f, 0, 0, 0, 0, 0, 0, 2, 0, 16, 0}, make([]byte, 24)...)), data), nil, "unknown sub-format"},
		{"adpcm", riff(chunk("fmt ", []byte{2, 0, 1, 0, 0x40, 0x1f, 0, 0, 0, 0, 0, 0, 2, 0, 4, 0}), data), nil, "format tag 0x0002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Decode(bytes.NewReader(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, a.Samples)
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(header(8000, 1, 4))
	f.Add(riff(chunk("LIST", []byte("x")), header(16000, 2, 0)[12:36], chunk("data", []byte{1, 2, 3, 4})))
	f.Add(header(8000, 1, streamingSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Decode(bytes.NewReader(b))
		if err != nil {
			return
		}
		if a.Channels < 1 || a.SampleRate <= 0 || len(a.Samples)%a.Channels != 0 || 2*len(a.Samples) > len(b) {
			t.Fatalf("inconsistent audio: %d Hz, %d channels, %d samples from %d bytes", a.SampleRate, a.Channels, len(a.Samples), len(b))
		}
		_ = a.Mono()
	})
}

func BenchmarkWrite(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "b.wav"))
	require.NoError(b, err)
	defer f.Close()
	w, err := NewWriter(f, 8000, 1)
	require.NoError(b, err)
	frame := sine(160, 8000, 1, 440)
	b.SetBytes(320)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
	require.NoError(b, w.Close())
}
