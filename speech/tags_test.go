package speech

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

func TestParseTags(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kinds    []segKind
		err      error
	}{
		{"plain", "hello", []segKind{segText}, nil},
		{"inline", "a [pause] b", []segKind{segText, segInline, segText}, nil},
		{"inline case", "a [Long-Pause]", []segKind{segText, segInline}, nil},
		{"unknown bracket is text", "see [1] and [note]", []segKind{segText}, nil},
		{"wrap", "<slow>a</slow>", []segKind{segOpen, segText, segClose}, nil},
		{"nested", "<soft>a <emphasis>b</emphasis></soft>", []segKind{segOpen, segText, segOpen, segText, segClose, segClose}, nil},
		{"comparison is text", "1 < 2 and 3 > 2", []segKind{segText}, nil},
		{"unknown angle tag", "<shout>a</shout>", nil, errUnknownTag},
		{"unclosed", "<slow>a", nil, errUnbalancedTag},
		{"stray close", "a</slow>", nil, errUnbalancedTag},
		{"crossed", "<slow><soft>a</slow></soft>", nil, errUnbalancedTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs, err := parseTags(tc.in)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var kinds []segKind
			for _, s := range segs {
				kinds = append(kinds, s.kind)
			}
			require.Equal(t, tc.kinds, kinds)
		})
	}
}

func TestSSMLEscapesText(t *testing.T) {
	segs, err := parseTags(`Tom & "Jerry" <fast>1 < 2</fast> [sigh]`)
	require.NoError(t, err)
	require.Equal(t, `<speak>Tom &amp; &quot;Jerry&quot; <prosody rate="fast">1 &lt; 2</prosody> <break time="400ms"/></speak>`, ssml(segs))
}

// phonemeLetters keeps only the phoneme symbols of espeak-ng's -x output,
// dropping stress, pause and clause marks that prosody changes.
func phonemeLetters(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '@' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestTagsAreNeverSpoken compares what espeak-ng says (its phonemes) for
// the SSML rendering of tagged text with what it says for the plain text:
// every tag must be rendered as prosody or silence, not as words.
func TestTagsAreNeverSpoken(t *testing.T) {
	e := NewEspeak("")
	req := &Request{Voice: Voices[0], Language: "en"}
	var tagged, plain strings.Builder
	inline := sortedKeys(inlineTags)
	wrap := sortedKeys(wrapTags)
	// Words start with consonants: espeak-ng links "delta echo" with an r
	// in running speech but not across a break, which is not a tag spoken.
	for i, w := range wrap {
		word := []string{"bravo", "charlie", "delta", "foxtrot", "golf", "hotel", "juliet", "kilo", "lima", "mike", "november", "papa", "romeo"}[i]
		tagged.WriteString("<" + strings.ToUpper(w[:1]) + w[1:] + ">" + word + " [" + inline[i%len(inline)] + "] ")
		plain.WriteString(word + " ")
	}
	for _, in := range inline {
		tagged.WriteString("[" + in + "] ")
	}
	for i := len(wrap) - 1; i >= 0; i-- {
		tagged.WriteString("</" + wrap[i] + ">")
	}
	tagged.WriteString(" done.")
	plain.WriteString(" done.")
	segs, err := parseTags(tagged.String())
	require.NoError(t, err)
	got, err := e.Phonemes(context.Background(), ssml(segs), req)
	require.NoError(t, err)
	want, err := e.Phonemes(context.Background(), "<speak>"+escapeXML(plain.String())+"</speak>", req)
	require.NoError(t, err)
	require.NotEmpty(t, phonemeLetters(want))
	require.Equal(t, phonemeLetters(want), phonemeLetters(got), "tagged: %s", tagged.String())
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slicesSort(out)
	return out
}

func FuzzParseTags(f *testing.F) {
	for _, s := range []string{"a [pause] b", "<slow>x</slow>", "<soft><emphasis>x</emphasis></soft>", "1 < 2 > 0", "[", "<", "</>", "<slow>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := parseTags(s)
		if err != nil {
			return
		}
		// Segments tile the input in order.
		at := 0
		for _, sg := range segs {
			if sg.start != at || sg.end < sg.start {
				t.Fatalf("segment %+v does not follow %d", sg, at)
			}
			at = sg.end
		}
		if at != len([]rune(s)) {
			t.Fatalf("segments end at %d of %d", at, len([]rune(s)))
		}
		_ = ssml(segs)
	})
}

func slicesSort(s []string) { slices.Sort(s) }
