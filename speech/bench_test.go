package speech

import (
	"context"
	"strings"
	"testing"
)

func BenchmarkEspeakSentence(b *testing.B) {
	e := NewEspeak("")
	req := &Request{Text: "Thanks for calling, how can I help you today?", Voice: Voices[0], Language: "en", SampleRate: 8000}
	for b.Loop() {
		if _, err := e.Synthesize(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEspeakMaxText renders the largest text the spec allows (15,000
// characters), with and without timestamps.
func BenchmarkEspeakMaxText(b *testing.B) {
	text := strings.Repeat("This sentence is repeated to reach the limit, [pause] <slow>slowly</slow>. ", 200)[:15000]
	text = text[:strings.LastIndex(text, ".")+1]
	for _, ts := range []bool{false, true} {
		name := "plain"
		if ts {
			name = "timestamps"
		}
		b.Run(name, func(b *testing.B) {
			e := NewEspeak("")
			req := &Request{Text: text, Voice: Voices[0], Language: "en", SampleRate: 24000, Timestamps: ts}
			for b.Loop() {
				if _, err := e.Synthesize(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeMP3(b *testing.B) {
	pcm := sine(24000, 440, 5, 8000)
	enc := Encoder{}
	for b.Loop() {
		if _, err := enc.Encode(context.Background(), pcm, DefaultFormat); err != nil {
			b.Fatal(err)
		}
	}
}
