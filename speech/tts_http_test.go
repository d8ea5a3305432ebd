package speech

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"switchboard/media"
	"testing"

	"github.com/hajimehoshi/go-mp3"
	"github.com/stretchr/testify/require"
)

func TestTTSValidation(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	long := strings.Repeat("a", 15001)
	for _, tc := range []struct {
		name, body, param string
	}{
		{"text missing", `{"language":"en"}`, "text"},
		{"text empty", `{"text":"","language":"en"}`, "text"},
		{"text too long", `{"text":"` + long + `","language":"en"}`, "text"},
		{"unknown wrapping tag", `{"text":"<shout>hi</shout>","language":"en"}`, "text"},
		{"unbalanced tag", `{"text":"<slow>hi","language":"en"}`, "text"},
		{"crossed tags", `{"text":"<slow><soft>hi</slow></soft>","language":"en"}`, "text"},
		{"text wrong type", `{"text":5,"language":"en"}`, "text"},
		{"unknown voice", `{"text":"hi","language":"en","voice_id":"bob"}`, "voice_id"},
		{"language missing", `{"text":"hi"}`, "language"},
		{"language unknown", `{"text":"hi","language":"xx"}`, "language"},
		{"codec missing", `{"text":"hi","language":"en","output_format":{}}`, "output_format.codec"},
		{"codec unknown", `{"text":"hi","language":"en","output_format":{"codec":"ogg"}}`, "output_format.codec"},
		{"sample rate", `{"text":"hi","language":"en","output_format":{"codec":"wav","sample_rate":11025}}`, "output_format.sample_rate"},
		{"bit rate", `{"text":"hi","language":"en","output_format":{"codec":"mp3","bit_rate":100000}}`, "output_format.bit_rate"},
		{"speed low", `{"text":"hi","language":"en","speed":0.69}`, "speed"},
		{"speed high", `{"text":"hi","language":"en","speed":1.51}`, "speed"},
		{"latency", `{"text":"hi","language":"en","optimize_streaming_latency":3}`, "optimize_streaming_latency"},
		{"normalization type", `{"text":"hi","language":"en","text_normalization":"yes"}`, "text_normalization"},
		{"timestamps type", `{"text":"hi","language":"en","with_timestamps":1}`, "with_timestamps"},
		{"unknown field", `{"text":"hi","language":"en","pitch":2}`, "pitch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := postJSON(t, srv.URL+"/v1/tts", tc.body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Equal(t, tc.param, apiError(t, resp).Param)
		})
	}
}

func TestTTSAcceptsCaseInsensitiveVoiceAndLanguage(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	resp := postJSON(t, srv.URL+"/v1/tts", `{"text":"hi","language":"PT-br","voice_id":"REX","output_format":{"codec":"pcm","sample_rate":8000}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(readAll(t, resp)))
}

// decodeMP3 decodes an mp3 stream with a decoder library and returns its
// sample rate and mono samples (go-mp3 always gives 16-bit stereo).
func decodeMP3(t *testing.T, b []byte) (int, []int16) {
	t.Helper()
	d, err := mp3.NewDecoder(bytes.NewReader(b))
	require.NoError(t, err)
	raw, err := io.ReadAll(d)
	require.NoError(t, err)
	st := media.DecodePCM16LE(nil, raw)
	mono := make([]int16, len(st)/2)
	for i := range mono {
		mono[i] = st[2*i]
	}
	return d.SampleRate(), mono
}

// TestTTSOutputFormats renders the same sentence in every codec at several
// rates and parses each back: the WAV header, raw PCM, G.711 decoded with
// media.PCMU/PCMA, mp3 decoded with go-mp3; each must carry sound of about the
// same length as the reference.
func TestTTSOutputFormats(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	text := "The quick brown fox jumps over the lazy dog."
	ref := postJSON(t, srv.URL+"/v1/tts", fmt.Sprintf(`{"text":%q,"language":"en","output_format":{"codec":"pcm","sample_rate":16000}}`, text))
	require.Equal(t, http.StatusOK, ref.StatusCode)
	refSec := float64(len(readAll(t, ref))/2) / 16000
	require.Greater(t, refSec, 1.5)
	for _, tc := range []struct {
		codec, ctype string
		rate, bits   int
	}{
		{"pcm", "audio/pcm", 8000, 0}, {"pcm", "audio/pcm", 48000, 0},
		{"wav", "audio/wav", 8000, 0}, {"wav", "audio/wav", 22050, 0}, {"wav", "audio/wav", 44100, 0},
		{"mulaw", "audio/basic", 8000, 0}, {"alaw", "audio/alaw", 8000, 0}, {"mulaw", "audio/basic", 16000, 0},
		{"mp3", "audio/mpeg", 24000, 128000}, {"mp3", "audio/mpeg", 44100, 192000}, {"mp3", "audio/mpeg", 16000, 32000},
		{"mp3", "audio/mpeg", 48000, 64000}, {"mp3", "audio/mpeg", 22050, 96000},
	} {
		t.Run(fmt.Sprintf("%s_%d", tc.codec, tc.rate), func(t *testing.T) {
			of := fmt.Sprintf(`{"codec":%q,"sample_rate":%d}`, tc.codec, tc.rate)
			if tc.bits > 0 {
				of = fmt.Sprintf(`{"codec":%q,"sample_rate":%d,"bit_rate":%d}`, tc.codec, tc.rate, tc.bits)
			}
			resp := postJSON(t, srv.URL+"/v1/tts", fmt.Sprintf(`{"text":%q,"language":"en","output_format":%s}`, text, of))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, tc.ctype, resp.Header.Get("Content-Type"))
			b := readAll(t, resp)
			var pcm []int16
			rate := tc.rate
			switch tc.codec {
			case "pcm":
				pcm = media.DecodePCM16LE(nil, b)
			case "wav":
				require.Equal(t, "RIFF", string(b[:4]))
				require.Equal(t, "WAVE", string(b[8:12]))
				require.Equal(t, uint32(len(b)-8), binary.LittleEndian.Uint32(b[4:]))
				require.Equal(t, uint16(1), binary.LittleEndian.Uint16(b[22:]), "mono")
				require.Equal(t, uint32(tc.rate), binary.LittleEndian.Uint32(b[24:]))
				require.Equal(t, uint16(16), binary.LittleEndian.Uint16(b[34:]))
				require.Equal(t, uint32(len(b)-44), binary.LittleEndian.Uint32(b[40:]))
				var err error
				pcm, rate, err = parseWAV(b)
				require.NoError(t, err)
			case "mulaw":
				pcm = media.PCMU.DecodeFrame(nil, b)
			case "alaw":
				pcm = media.PCMA.DecodeFrame(nil, b)
			case "mp3":
				rate, pcm = decodeMP3(t, b)
				require.Equal(t, tc.rate, rate)
				// A CBR frame is 144*bitrate/rate bytes (72 for MPEG-2).
				require.Equal(t, byte(0xFF), b[0])
			}
			sec := float64(len(pcm)) / float64(rate)
			require.InDelta(t, refSec, sec, 0.15, "length")
			require.Greater(t, rms(pcm), 500.0, "carries sound")
		})
	}
}

func TestTTSDefaultIsMP3At24k(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	resp := postJSON(t, srv.URL+"/v1/tts", `{"text":"Hello there.","language":"en"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "audio/mpeg", resp.Header.Get("Content-Type"))
	b := readAll(t, resp)
	rate, pcm := decodeMP3(t, b)
	require.Equal(t, 24000, rate)
	require.Greater(t, rms(pcm), 500.0)
	// MPEG-2 layer III, 128 kbps: bit-rate index 12 in the first header.
	require.Equal(t, byte(0xF3), b[0+1]&0xFF, "MPEG-2 layer III, no CRC")
	require.Equal(t, byte(0xC), b[2]>>4, "128 kbps")
}

func TestTTSSpeedChangesLength(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	length := func(speed float64) float64 {
		resp := postJSON(t, srv.URL+"/v1/tts", fmt.Sprintf(`{"text":"Speaking at a different pace changes the length of the audio.","language":"en","speed":%v,"output_format":{"codec":"pcm","sample_rate":8000}}`, speed))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return float64(len(readAll(t, resp))/2) / 8000
	}
	slow, normal, fast := length(0.7), length(1.0), length(1.5)
	require.Greater(t, slow, normal*1.2)
	require.Less(t, fast, normal*0.8)
}

type timedBody struct {
	Audio           string
	ContentType     string `json:"content_type"`
	Duration        float64
	AudioTimestamps struct {
		GraphChars []string     `json:"graph_chars"`
		GraphTimes [][2]float64 `json:"graph_times"`
	} `json:"audio_timestamps"`
}

// TestTTSTimestamps checks the envelope: every input character, tags
// included, with times inside the audio, in order, and a [long-pause]
// that spans 1.5 s of silence in the audio itself.
func TestTTSTimestamps(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	text := "Hello there, <slow>my friend</slow>. [long-pause] Are you <whisper>ready</whisper>?"
	resp := postJSON(t, srv.URL+"/v1/tts", fmt.Sprintf(`{"text":%q,"language":"en","with_timestamps":true,"output_format":{"codec":"wav","sample_rate":16000}}`, text))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var env timedBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	require.Equal(t, "audio/wav", env.ContentType)
	audio, err := base64.StdEncoding.DecodeString(env.Audio)
	require.NoError(t, err)
	pcm, rate, err := parseWAV(audio)
	require.NoError(t, err)
	require.Equal(t, 16000, rate)
	require.InDelta(t, float64(len(pcm))/16000, env.Duration, 0.002)

	ts := env.AudioTimestamps
	require.Equal(t, text, strings.Join(ts.GraphChars, ""))
	require.Len(t, ts.GraphChars, len([]rune(text)))
	require.Len(t, ts.GraphTimes, len(ts.GraphChars))
	prev := 0.0
	for i, g := range ts.GraphTimes {
		require.LessOrEqual(t, g[0], g[1], "entry %d", i)
		require.GreaterOrEqual(t, g[0], prev-1e-9, "entry %d starts before the previous one", i)
		require.LessOrEqual(t, g[1], env.Duration+1e-3)
		prev = g[0]
	}
	// The long pause: 1.5 s of silence at the times given.
	at := strings.Index(text, "[long-pause]")
	span := ts.GraphTimes[len([]rune(text[:at]))]
	require.InDelta(t, 1.5, span[1]-span[0], 0.002)
	quiet := pcm[int(span[0]*16000)+10 : int(span[1]*16000)-10]
	require.Less(t, rms(quiet), 1.0, "the pause is silent")
	// Speech on both sides of it.
	hello := ts.GraphTimes[0]
	require.Greater(t, rms(pcm[int(hello[0]*16000):int(hello[1]*16000)+400]), 300.0)
	ready := ts.GraphTimes[strings.Index(text, "ready")]
	require.Greater(t, ready[0], span[1])
	require.Greater(t, rms(pcm[int(ready[0]*16000):int(ready[0]*16000)+1600]), 100.0)
}

func TestTTSVoices(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/tts/voices", nil)
	req.Header = bearer()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct {
		Voices []map[string]string
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Len(t, body.Voices, len(Voices))
	require.Equal(t, map[string]string{"voice_id": "eve", "name": "Eve"}, body.Voices[0])
}

func TestTTSVoicesSoundDifferent(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	seen := map[string]bool{}
	for _, v := range Voices {
		resp := postJSON(t, srv.URL+"/v1/tts", fmt.Sprintf(`{"text":"Good morning.","language":"en","voice_id":%q,"output_format":{"codec":"pcm","sample_rate":8000}}`, v.ID))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		seen[string(readAll(t, resp))] = true
	}
	require.Len(t, seen, len(Voices))
}

func TestTTSNeedsKey(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	resp, err := http.Post(srv.URL+"/v1/tts", "application/json", strings.NewReader(`{"text":"hi","language":"en"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestTTSMissingEspeakIs503(t *testing.T) {
	srv, _ := newTestServer(t, Options{EspeakPath: "/nonexistent/espeak-ng"})
	resp := postJSON(t, srv.URL+"/v1/tts", `{"text":"hi","language":"en"}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, apiError(t, resp).Message, "install the Debian package espeak-ng")
}

func TestTTSMissingLameIs503(t *testing.T) {
	srv, _ := newTestServer(t, Options{LamePath: "/nonexistent/lame"})
	resp := postJSON(t, srv.URL+"/v1/tts", `{"text":"hi","language":"en"}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, apiError(t, resp).Message, "lame")
}

// TestLanguageTagsBCP47: a BCP-47 tag not in the list as such is read by
// its primary subtag; a tag of no listed language is still unknown.
func TestLanguageTagsBCP47(t *testing.T) {
	for tag, want := range map[string]string{"en-US": "en", "EN_gb": "en", "fr-CA": "fr", "zh-Hans-CN": "zh", "pt": "pt-BR",
		"pt-pt": "pt-PT", "es": "es-MX", "ar-EG": "ar-EG", "AUTO": "auto"} {
		l, ok := lookupLanguage(tag)
		require.True(t, ok, tag)
		require.Equal(t, want, l.code, tag)
	}
	for _, tag := range []string{"", "klingon", "x", "tlh-US", "au-to"} {
		_, ok := lookupLanguage(tag)
		require.False(t, ok, tag)
	}
	srv, _ := newTestServer(t, Options{})
	resp := postJSON(t, srv.URL+"/v1/tts", `{"text":"hi","language":"en-US","output_format":{"codec":"pcm","sample_rate":8000}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(readAll(t, resp)))
	c := dialWS(t, wsURL(srv.URL, "/v1/tts?language=en-US&sample_rate=8000"))
	c.Close()
}
