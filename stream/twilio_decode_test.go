package stream

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// viewOf is what encoding/json reads of b, the reference of the fast path.
func viewOf(t testing.TB, b []byte) (twilioView, error) {
	var in twilioIn
	if err := json.Unmarshal(b, &in); err != nil {
		return twilioView{}, err
	}
	v := twilioView{event: []byte(in.Event), streamSid: []byte(in.StreamSid)}
	if in.Media != nil {
		v.hasMedia, v.payload = true, []byte(in.Media.Payload)
	}
	if in.Mark != nil {
		v.hasMark, v.name = true, []byte(in.Mark.Name)
	}
	return v, nil
}

func (v twilioView) String() string {
	return fmt.Sprintf("{event %q streamSid %q media %v payload %q mark %v name %q}", v.event, v.streamSid, v.hasMedia, v.payload, v.hasMark, v.name)
}

// sameView compares two views by content (nil and empty slices alike).
func sameView(t testing.TB, want, got twilioView, msg string) {
	t.Helper()
	if string(want.event) != string(got.event) || string(want.streamSid) != string(got.streamSid) ||
		want.hasMedia != got.hasMedia || string(want.payload) != string(got.payload) ||
		want.hasMark != got.hasMark || string(want.name) != string(got.name) {
		t.Fatalf("%s: encoding/json reads %s, the decoder %s", msg, want, got)
	}
}

// TestDecodeTwilioFastPath: the messages bots send (pipecat's
// json.dumps form with spaces, compact ones, members in any order, members
// the stream does not read) take the fast path and read as encoding/json
// reads them; anything the fast path does not take falls back to
// encoding/json with its reading, errors included.
func TestDecodeTwilioFastPath(t *testing.T) {
	fast := []string{
		`{"event": "media", "streamSid": "MZ1", "media": {"payload": "AAEC/w=="}}`,
		`{"event":"media","streamSid":"MZ1","media":{"payload":"AAEC/w=="}}`,
		`{"media":{"track":"outbound","payload":"AAEC"},"event":"media"}`,
		"\t{\r\n\"event\" :\"mark\" , \"mark\":{ \"name\" : \"m-1\" } , \"streamSid\":\"MZ1\"}\n",
		`{"event":"clear","streamSid":"MZ1"}`,
		`{"event":"clear","sequenceNumber":"7"}`,
		`{"event":"media","media":{}}`,
		`{}`,
	}
	for _, m := range fast {
		var v twilioView
		require.True(t, scanTwilio([]byte(m), &v), "fast path for %s", m)
		want, err := viewOf(t, []byte(m))
		require.NoError(t, err)
		var got twilioView
		require.NoError(t, decodeTwilio([]byte(m), &got))
		sameView(t, want, got, m)
	}
	slow := []string{
		`{"event":"media","media":{"payload":"AA\/w=="}}`,       // an escape
		`{"event":"mark","mark":{"name":"élan"}}`,               // not ASCII
		`{"event":"media","Event":"mark"}`,                      // encoding/json ignores case
		`{"event":"media","media":{"PAYLOAD":"AA=="}}`,          // the same inside
		`{"event":"media","event":"mark"}`,                      // a duplicate: the last stands
		`{"event":"media","media":{"payload":"AA"},"media":{}}`, // merged objects
		`{"event":"media","sequenceNumber":7}`,                  // a number
		`{"event":"media","extra":{"a":["b"]}}`,                 // a nested member not read
		`{"event":"media","media":null}`,                        // null
		`{"event":"media"} {}`,                                  // two values
		`{"event":"media",}`,                                    // invalid
		`{"event":5}`,                                           // a wrong type
		`["media"]`,
		``,
		"{\"event\":\"me\x01dia\"}", // a control byte
	}
	for _, m := range slow {
		var v twilioView
		require.False(t, scanTwilio([]byte(m), &v), "no fast path for %s", m)
		want, wantErr := viewOf(t, []byte(m))
		var got twilioView
		err := decodeTwilio([]byte(m), &got)
		if wantErr != nil {
			require.Error(t, err, m)
			continue
		}
		require.NoError(t, err, m)
		sameView(t, want, got, m)
	}
}

// TestDecodeTwilioAllocates: the fast path reads a media message without
// allocating.
func TestDecodeTwilioAllocates(t *testing.T) {
	b := []byte(`{"event": "media", "streamSid": "MZ0123456789abcdef0123456789abcdef", "media": {"payload": "AAECAwQFBgcICQ=="}}`)
	var v twilioView
	n := testing.AllocsPerRun(100, func() { _ = decodeTwilio(b, &v) })
	require.Zero(t, n)
}

// FuzzTwilioDecode: whatever a bot sends, the decoder reads it as
// encoding/json does, and the fast path takes only valid JSON.
func FuzzTwilioDecode(f *testing.F) {
	for _, s := range []string{
		`{"event": "media", "streamSid": "MZ1", "media": {"payload": "AAEC/w=="}}`,
		`{"event":"mark","streamSid":"MZ1","mark":{"name":"m1"}}`,
		`{"event":"clear"}`,
		`{"event":"media","Event":"mark","media":{"payload":"AA","Payload":"BB"}}`,
		`{"event":"media","media":{"payload":"AA"},"media":{"x":"y"}}`,
		`{"a":"\u0041","event":"media"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := viewOf(t, b)
		var fast twilioView
		if scanTwilio(b, &fast) {
			if wantErr != nil {
				t.Fatalf("the fast path took %q, which encoding/json refuses: %v", b, wantErr)
			}
			sameView(t, want, fast, string(b))
		}
		var got twilioView
		err := decodeTwilio(b, &got)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: decoder error %v, encoding/json's %v", b, err, wantErr)
		}
		if err == nil {
			sameView(t, want, got, string(b))
		}
	})
}
