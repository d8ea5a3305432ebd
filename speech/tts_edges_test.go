package speech

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"switchboard/media"
)

// TestTTSSpeaksEspeakLanguagesBeyondTheList: a language the spec's list
// lacks but espeak-ng has a voice for (pl, nl, sv; a region or case or
// underscore spelling of one) is spoken, in that language, on POST
// /v1/tts and the WebSocket; the list comes from espeak-ng --voices, and a
// language espeak-ng has no voice for is still a 400 naming language.
func TestTTSSpeaksEspeakLanguagesBeyondTheList(t *testing.T) {
	srv, svc := newTestServer(t, Options{})
	render := func(lang string) []byte {
		t.Helper()
		resp := postJSON(t, srv.URL+"/v1/tts", fmt.Sprintf(`{"text":"Dzień dobry, jak się masz?","language":%q,"output_format":{"codec":"pcm","sample_rate":16000}}`, lang))
		b := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", lang, b)
		require.Greater(t, rms(media.DecodePCM16LE(nil, b)), 500.0, "%s carries sound", lang)
		return b
	}
	en := render("en")
	pl := render("pl")
	require.NotEqual(t, en, pl, "Polish is not spoken as English")
	require.NotEqual(t, pl, render("nl"))
	require.NotEqual(t, en, render("sv"))
	require.Equal(t, pl, render("PL"), "case-insensitive")
	for tag, want := range map[string]string{"pl": "pl", "PL-pl": "pl", "sv-SE": "sv", "nb_NO": "nb", "nl-BE": "nl", "en-GB": "en", "pt": "pt-BR"} {
		got, err := svc.language(tag, "language")
		require.NoError(t, err, tag)
		require.Equal(t, want, got, tag)
	}

	for _, tag := range []string{"tlh", "xx-YY", "klingon", "pl+m3", "../pl"} {
		resp := postJSON(t, srv.URL+"/v1/tts", fmt.Sprintf(`{"text":"hi","language":%q}`, tag))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, tag)
		e := apiError(t, resp)
		require.Equal(t, "language", e.Param)
		require.Contains(t, e.Message, "espeak-ng")
	}

	c := dialWS(t, wsURL(srv.URL, "/v1/tts?language=sv&sample_rate=16000"))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "God morgon."}))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.done"}))
	audio, _ := readUtterance(t, c)
	require.Greater(t, rms(media.DecodePCM16LE(nil, audio)), 500.0)
	_, resp, err := websocket.DefaultDialer.Dial(wsURL(srv.URL, "/v1/tts?language=tlh"), bearer())
	require.Error(t, err)
	require.Equal(t, "language", apiError(t, resp).Param)
}

func TestParseEspeakVoices(t *testing.T) {
	out := "Pty Language       Age/Gender VoiceName          File                 Other Languages\n" +
		" 5  af              --/M      Afrikaans          gmw/af               \n" +
		" 5  cmn             --/M      Chinese_(Mandarin,_latin_as_English) sit/cmn              (zh-cmn 5)(zh 5)\n" +
		" 2  en-us           --/M      English_(America)  gmw/en-US            (en 3)\n" +
		" 5  fr-fr           --/M      French_(France)    roa/fr               (fr 5)\n"
	codes := parseEspeakVoices(out)
	require.Equal(t, map[string]bool{"af": true, "cmn": true, "zh-cmn": true, "zh": true, "en-us": true, "en": true, "fr-fr": true, "fr": true}, codes)
	for tag, want := range map[string]string{"af": "af", "zh-CMN": "zh-cmn", "zh-Hant-TW": "zh", "en_US": "en-us", "fr-CA": "fr"} {
		got, ok := matchLanguage(codes, tag)
		require.True(t, ok, tag)
		require.Equal(t, want, got, tag)
	}
	for _, tag := range []string{"", "de", "a", "language", "fr-", "fr+f3", "-fr"} {
		_, ok := matchLanguage(codes, tag)
		require.False(t, ok, tag)
	}
}

// TestUpstreamTTSForwardsOtherLanguages: with the upstream engine a
// well-formed tag beyond the list goes to the provider as written, which
// judges; a malformed one is a 400 here.
func TestUpstreamTTSForwardsOtherLanguages(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	resp := postJSON(t, srv.URL+"/v1/tts", `{"text":"Hej","language":"sv-SE","output_format":{"codec":"pcm","sample_rate":16000}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(readAll(t, resp)))
	require.Equal(t, "sv-SE", f.lastTTS(t)["language"])
	resp = postJSON(t, srv.URL+"/v1/tts", `{"text":"Hej","language":"not a tag"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "language", apiError(t, resp).Param)
}

// TestTTSMP3BitRateTheRateCarries: an mp3 bit rate the sample rate cannot
// carry (MPEG-2 rates, 16 to 24 kHz, carry at most 160 kbps; 8 kHz,
// MPEG-2.5, 64 kbps) is a 400 naming the field on POST /v1/tts and the
// WebSocket, not lowered behind the client's back; one it carries is
// encoded as asked, and without a bit rate 8 kHz gets the highest it
// carries. The bit rate is read back from the mp3 frame headers.
func TestTTSMP3BitRateTheRateCarries(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	post := func(format string) *http.Response {
		return postJSON(t, srv.URL+"/v1/tts", `{"text":"The quick brown fox.","language":"en","output_format":`+format+`}`)
	}
	for _, tc := range []struct {
		rate, bits, max int
	}{{24000, 192000, 160000}, {22050, 192000, 160000}, {16000, 192000, 160000}, {8000, 96000, 64000}, {8000, 128000, 64000}, {8000, 192000, 64000}} {
		resp := post(fmt.Sprintf(`{"codec":"mp3","sample_rate":%d,"bit_rate":%d}`, tc.rate, tc.bits))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%d Hz at %d bps", tc.rate, tc.bits)
		e := apiError(t, resp)
		require.Equal(t, "output_format.bit_rate", e.Param)
		require.Contains(t, e.Message, fmt.Sprint(tc.max))
	}
	for _, tc := range []struct {
		format string
		rate   int
		bits   int
	}{
		{`{"codec":"mp3","sample_rate":8000,"bit_rate":64000}`, 8000, 64000},
		{`{"codec":"mp3","sample_rate":8000}`, 8000, 64000},
		{`{"codec":"mp3","sample_rate":24000,"bit_rate":96000}`, 24000, 96000},
		{`{"codec":"mp3","sample_rate":24000}`, 24000, 128000},
		{`{"codec":"mp3","sample_rate":48000,"bit_rate":192000}`, 48000, 192000},
	} {
		resp := post(tc.format)
		b := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", tc.format, b)
		rate, bits := mp3Header(t, b)
		require.Equal(t, tc.rate, rate, tc.format)
		require.Equal(t, tc.bits, bits, tc.format)
	}

	_, resp, err := websocket.DefaultDialer.Dial(wsURL(srv.URL, "/v1/tts?language=en&codec=mp3&sample_rate=16000&bit_rate=192000"), bearer())
	require.Error(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "bit_rate", apiError(t, resp).Param)
	c := dialWS(t, wsURL(srv.URL, "/v1/tts?language=en&codec=mp3&sample_rate=8000"))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "Hello there."}))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.done"}))
	audio, _ := readUtterance(t, c)
	rate, bits := mp3Header(t, audio)
	require.Equal(t, 8000, rate)
	require.Equal(t, 64000, bits, "the default bit rate, lowered to what 8 kHz carries")
}

// mp3Header reads the sample rate and bit rate of the first MPEG audio
// frame header (Layer III) in b.
func mp3Header(t *testing.T, b []byte) (rate, bits int) {
	t.Helper()
	for i := 0; i+4 <= len(b); i++ {
		if b[i] != 0xFF || b[i+1]&0xE0 != 0xE0 {
			continue
		}
		version := (b[i+1] >> 3) & 3 // 0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1
		if version == 1 || (b[i+1]>>1)&3 != 1 {
			continue // reserved, or not Layer III
		}
		bi, ri := int(b[i+2]>>4), int((b[i+2]>>2)&3)
		if bi == 0 || bi == 15 || ri == 3 {
			continue
		}
		rates := map[byte][3]int{3: {44100, 48000, 32000}, 2: {22050, 24000, 16000}, 0: {11025, 12000, 8000}}
		v1 := [15]int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}
		v2 := [15]int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}
		kbps := v2[bi]
		if version == 3 {
			kbps = v1[bi]
		}
		return rates[version][ri], kbps * 1000
	}
	t.Fatalf("no mp3 frame header in %d bytes", len(b))
	return 0, 0
}
