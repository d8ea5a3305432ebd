package realtime

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGoldenEventsRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/events/*.json")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range files {
		typ := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(typ, func(t *testing.T) {
			in, err := os.ReadFile(f)
			require.NoError(t, err)
			e, err := Decode(in)
			require.NoError(t, err)
			_, unknown := e.(*Unknown)
			require.False(t, unknown, "golden event decoded as Unknown")
			require.Equal(t, typ, e.EventType())
			out, err := Encode(e)
			require.NoError(t, err)
			require.JSONEq(t, string(in), string(out))
			require.True(t, bytes.HasPrefix(out, []byte(`{"type":"`+typ+`"`)), "type member first: %s", out)
			// A second round trip is byte-stable.
			e2, err := Decode(out)
			require.NoError(t, err)
			out2, err := Encode(e2)
			require.NoError(t, err)
			require.Equal(t, string(out), string(out2))
			seen[typ] = true
		})
	}
	for _, typ := range append(append([]string{}, ClientTypes...), ServerTypes...) {
		require.True(t, seen[typ], "no golden file for %s", typ)
	}
}

func TestUnknownPassthrough(t *testing.T) {
	files, err := filepath.Glob("testdata/unknown/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		in, err := os.ReadFile(f)
		require.NoError(t, err)
		e, err := Decode(in)
		require.NoError(t, err)
		u, ok := e.(*Unknown)
		require.True(t, ok, "%s: %T", f, e)
		require.Equal(t, strings.TrimSuffix(filepath.Base(f), ".json"), u.Type)
		out, err := Encode(e)
		require.NoError(t, err)
		require.Equal(t, string(in), string(out), "byte-identical")
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"not json", `hello`},
		{"array", `[1,2]`},
		{"no type", `{"event_id":"x"}`},
		{"numeric type", `{"type":5}`},
		{"empty type", `{"type":""}`},
		{"truncated", `{"type":"session.update","session":{`},
		{"trailing", `{"type":"input_audio_buffer.commit"} x`},
		{"wrong member type", `{"type":"conversation.item.truncate","item_id":"a","audio_end_ms":"ten"}`},
		{"bad base64", `{"type":"input_audio_buffer.append","audio":"!!!"}`},
		{"unknown invalid", `{"type":"x.y","a":tru}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			require.Error(t, err)
		})
	}
}

func TestDecodeLenientKeepsMistypedKnownEvent(t *testing.T) {
	in := `{"type":"conversation.item.truncate","item_id":"a","audio_end_ms":"ten"}`
	e, err := DecodeLenient([]byte(in))
	require.NoError(t, err)
	require.Equal(t, &Unknown{Type: TypeConversationItemTruncate, Raw: json.RawMessage(in)}, e)
}

func TestFastPathsAgreeWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"type":"input_audio_buffer.append","audio":"AAEC"}`,
		`{"type":"input_audio_buffer.append","event_id":"e\u00e9","audio":"AAEC"}`,
		`{"audio":"AAEC","type":"input_audio_buffer.append","extra":{"a":[1]}}`,
		`{"type":"response.output_audio.delta","event_id":"e1","response_id":"r","item_id":"i","output_index":2,"content_index":-1,"delta":""}`,
		`{"type":"response.output_audio.delta","output_index": 1 ,"delta":"AAEC","x":[]}`,
		`{"type":"response.output_audio.delta","delta":null}`,
	} {
		fast, err := Decode([]byte(in))
		require.NoError(t, err, in)
		typ, _ := peekType([]byte(in))
		slow := registry[typ]()
		require.NoError(t, json.Unmarshal([]byte(in), slow))
		a, err := Encode(fast)
		require.NoError(t, err)
		b, err := Encode(slow)
		require.NoError(t, err)
		require.Equal(t, string(b), string(a), in)
	}
}

func TestEncodeAppendIsValidJSON(t *testing.T) {
	pcm := make([]byte, 960)
	for i := range pcm {
		pcm[i] = byte(i * 7)
	}
	b := AppendAudioEvent(nil, `id"<>`, pcm)
	var m struct {
		Type    string `json:"type"`
		EventID string `json:"event_id"`
		Audio   []byte `json:"audio"`
	}
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, TypeInputAudioBufferAppend, m.Type)
	require.Equal(t, `id"<>`, m.EventID)
	require.Equal(t, pcm, m.Audio)
}

func TestSessionConfigNullableAndExtras(t *testing.T) {
	var u SessionConfig
	require.NoError(t, json.Unmarshal([]byte(`{"type":"realtime","instructions":"","tools":[],"audio":{"input":{"turn_detection":null,"x_in":1},"output":{"voice":{"id":"voice_1"}}},"future":{"a":1}}`), &u))
	require.True(t, u.Audio.Input.TurnDetection.IsNull())
	require.NotNil(t, u.Instructions)
	require.NotNil(t, u.Tools)
	require.Equal(t, "voice_1", u.Audio.Output.Voice.ID)
	require.JSONEq(t, `{"a":1}`, string(u.Extra["future"]))

	base := SessionConfig{Model: "m", Instructions: ptr("hello"), Tools: []Tool{{Type: "function", Name: "f"}},
		Audio: &AudioConfig{Input: &AudioInput{Format: PCM24k(), TurnDetection: Some(TurnDetection{Type: TurnServerVAD})}}}
	require.Equal(t, TurnServerVAD, base.TurnDetection().Type)
	base.Merge(u)
	require.Equal(t, "m", base.Model)
	require.Equal(t, "", *base.Instructions)
	require.Empty(t, base.Tools)
	require.Nil(t, base.TurnDetection(), "null turn_detection means manual commit")
	require.Equal(t, FormatPCM, base.InputFormat().Type, "format untouched")
	out, err := json.Marshal(base)
	require.NoError(t, err)
	require.Contains(t, string(out), `"turn_detection":null`)
	require.Contains(t, string(out), `"x_in":1`)
	require.Contains(t, string(out), `"future":{"a":1}`)

	var absent SessionConfig
	require.NoError(t, json.Unmarshal([]byte(`{"audio":{"input":{}}}`), &absent))
	require.False(t, absent.Audio.Input.TurnDetection.Present)
	require.Equal(t, TurnServerVAD, absent.TurnDetection().Type, "absent means the default server VAD")
}

func TestAudioFormat(t *testing.T) {
	for _, tc := range []struct {
		f        *AudioFormat
		rate, bp int
		valid    bool
	}{
		{nil, 24000, 48, true},
		{PCM24k(), 24000, 48, true},
		{&AudioFormat{Type: FormatPCMU}, 8000, 8, true},
		{&AudioFormat{Type: FormatPCMA}, 8000, 8, true},
		{&AudioFormat{Type: FormatPCM, Rate: 16000}, 16000, 32, false},
		{&AudioFormat{Type: "audio/opus"}, 24000, 48, false},
	} {
		require.Equal(t, tc.rate, tc.f.SampleRate())
		require.Equal(t, tc.bp, tc.f.BytesPerMs())
		require.Equal(t, tc.valid, tc.f.Validate() == nil)
	}
}

func TestItemRequiredMembers(t *testing.T) {
	b, err := json.Marshal(FunctionCallOutput("call_1", ""))
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"function_call_output","call_id":"call_1","output":""}`, string(b))
	b, err = json.Marshal(UserText("hi"))
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`, string(b))
}

func TestEventIDHelpers(t *testing.T) {
	e := &ResponseCancel{}
	SetEventID(e, "evt_1")
	require.Equal(t, "evt_1", EventID(e))
	u := &Unknown{Type: "x"}
	SetEventID(u, "y")
	require.Equal(t, "", EventID(u))
	require.True(t, reflect.TypeOf(e).Elem().Field(0).Anonymous)
}

func ptr[T any](v T) *T { return &v }

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`{"type":"response.output_audio.delta","delta":"AA=="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		out, err := Encode(e)
		if err != nil {
			t.Fatalf("decoded %T but cannot encode: %v", e, err)
		}
		if !json.Valid(out) {
			t.Fatalf("encoded invalid JSON: %q", out)
		}
		e2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-decode: %v (%q)", err, out)
		}
		if e2.EventType() != e.EventType() {
			t.Fatalf("type changed: %q -> %q", e.EventType(), e2.EventType())
		}
		out2, err := Encode(e2)
		if err != nil {
			t.Fatal(err)
		}
		if _, unknown := e.(*Unknown); !unknown && !bytes.Equal(out, out2) {
			t.Fatalf("unstable encoding:\n%s\n%s", out, out2)
		}
	})
}

func BenchmarkEncodeAppend20ms(b *testing.B) {
	pcm := make([]byte, 960) // 20 ms of 24 kHz PCM16
	buf := make([]byte, 0, 2048)
	b.SetBytes(int64(len(pcm)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendAudioEvent(buf[:0], "", pcm)
	}
}

func BenchmarkEncodeAppend20msReflect(b *testing.B) {
	e := &InputAudioBufferAppend{Audio: make([]byte, 960)}
	b.SetBytes(960)
	b.ReportAllocs()
	for b.Loop() {
		m, _ := json.Marshal(e)
		_ = m
	}
}

func BenchmarkDecodeAudioDelta100ms(b *testing.B) {
	in := appendAudioDelta(nil, &ResponseOutputAudioDelta{Header: Header{EventID: "event_123"}, ResponseID: "resp_1", ItemID: "item_1", Delta: make([]byte, 4800)})
	b.SetBytes(4800)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeAudioDelta100msReflect(b *testing.B) {
	in := appendAudioDelta(nil, &ResponseOutputAudioDelta{Header: Header{EventID: "event_123"}, ResponseID: "resp_1", ItemID: "item_1", Delta: make([]byte, 4800)})
	b.SetBytes(4800)
	b.ReportAllocs()
	for b.Loop() {
		var e ResponseOutputAudioDelta
		if err := json.Unmarshal(in, &e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFastPathHonoursDuplicateType(t *testing.T) {
	e, err := Decode([]byte(`{"type":"response.output_audio.delta","delta":"AAEC","type":"x.y"}`))
	require.NoError(t, err)
	require.Equal(t, "x.y", e.EventType(), "the last type member wins, as in encoding/json")
}

// TestContentPartsCarryTheReferenceMembers: the official clients' schemas
// require these members even when empty: an input_audio part's
// transcript (null until transcribed), an audio part's transcript, a text
// part's text.
func TestContentPartsCarryTheReferenceMembers(t *testing.T) {
	for _, tc := range []struct {
		part ContentPart
		want string
	}{
		{ContentPart{Type: ContentInputAudio}, `{"type":"input_audio","transcript":null}`},
		{ContentPart{Type: ContentInputAudio, Transcript: "hi"}, `{"type":"input_audio","transcript":"hi"}`},
		{ContentPart{Type: ContentOutputAudio}, `{"type":"output_audio","transcript":""}`},
		{ContentPart{Type: ContentAudio}, `{"type":"audio","transcript":""}`},
		{ContentPart{Type: ContentInputText}, `{"type":"input_text","text":""}`},
		{ContentPart{Type: ContentOutputText, Text: "x"}, `{"type":"output_text","text":"x"}`},
	} {
		b, err := json.Marshal(tc.part)
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(b))
		var back ContentPart
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, tc.part, back)
	}
}
