package speech

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Speech tags (spec "Speech tags"). Inline tags mark a point in the text;
// wrapping tags enclose a section and may nest.
//
// Text that looks like a tag but is not one is handled this way:
//   - "[...]" that is not a known inline tag is ordinary text (brackets are
//     common in prose; espeak-ng does not read the brackets themselves);
//   - "<name>" or "</name>" (letters and hyphens only) that is not a known
//     wrapping tag is a 400: it is markup-shaped, and reading it aloud or
//     dropping it silently would both surprise the caller;
//   - any other "<" or ">" is ordinary text.
//
// Unbalanced or crossed wrapping tags are a 400.

// inlineTags maps each inline tag to the silence the local engine puts in
// its place: espeak-ng cannot laugh or breathe, so non-verbal sounds become
// short pauses rather than words.
var inlineTags = map[string]time.Duration{
	"pause":        500 * time.Millisecond,
	"long-pause":   1500 * time.Millisecond,
	"hum-tune":     400 * time.Millisecond,
	"laugh":        300 * time.Millisecond,
	"chuckle":      250 * time.Millisecond,
	"giggle":       250 * time.Millisecond,
	"cry":          300 * time.Millisecond,
	"tsk":          150 * time.Millisecond,
	"tongue-click": 150 * time.Millisecond,
	"lip-smack":    150 * time.Millisecond,
	"breath":       300 * time.Millisecond,
	"inhale":       300 * time.Millisecond,
	"exhale":       300 * time.Millisecond,
	"sigh":         400 * time.Millisecond,
}

// wrapTags maps each wrapping tag to the SSML element espeak-ng renders it
// with.
var wrapTags = map[string][2]string{
	"soft":               {`<prosody volume="soft">`, `</prosody>`},
	"whisper":            {`<prosody volume="x-soft" rate="slow">`, `</prosody>`},
	"loud":               {`<prosody volume="loud">`, `</prosody>`},
	"build-intensity":    {`<prosody volume="loud" rate="fast">`, `</prosody>`},
	"decrease-intensity": {`<prosody volume="soft" rate="slow">`, `</prosody>`},
	"higher-pitch":       {`<prosody pitch="high">`, `</prosody>`},
	"lower-pitch":        {`<prosody pitch="low">`, `</prosody>`},
	"slow":               {`<prosody rate="slow">`, `</prosody>`},
	"fast":               {`<prosody rate="fast">`, `</prosody>`},
	"sing-song":          {`<prosody pitch="high" range="x-high">`, `</prosody>`},
	"singing":            {`<prosody pitch="high" range="x-high" rate="slow">`, `</prosody>`},
	"laugh-speak":        {`<prosody pitch="high" rate="fast">`, `</prosody>`},
	"emphasis":           {`<emphasis level="strong">`, `</emphasis>`},
}

var (
	errUnknownTag    = errors.New("unknown speech tag")
	errUnbalancedTag = errors.New("unbalanced speech tag")
)

type segKind int

const (
	segText segKind = iota
	segInline
	segOpen
	segClose
)

// segment is a run of text or one tag of a parsed text; Start and End are
// rune offsets into the input.
type segment struct {
	kind       segKind
	text       string // the text, or the lower-case tag name
	start, end int
}

// parseTags splits text into text runs and tags, checking that wrapping
// tags are known and balanced.
func parseTags(text string) ([]segment, error) {
	rs := []rune(text)
	var (
		segs  []segment
		stack []string
		buf   strings.Builder
		bufAt int
	)
	flush := func(at int) {
		if buf.Len() > 0 {
			segs = append(segs, segment{kind: segText, text: buf.String(), start: bufAt, end: at})
			buf.Reset()
		}
	}
	for i := 0; i < len(rs); {
		switch rs[i] {
		case '[':
			if j := indexRune(rs, i+1, ']', 24); j > 0 {
				name := strings.ToLower(string(rs[i+1 : j]))
				if _, ok := inlineTags[name]; ok {
					flush(i)
					segs = append(segs, segment{kind: segInline, text: name, start: i, end: j + 1})
					i = j + 1
					bufAt = i
					continue
				}
			}
		case '<':
			if j, closing, name, ok := angleTag(rs, i); ok {
				if _, known := wrapTags[name]; !known {
					return nil, fmt.Errorf("%w %q at character %d", errUnknownTag, string(rs[i:j]), i)
				}
				flush(i)
				if closing {
					if len(stack) == 0 || stack[len(stack)-1] != name {
						return nil, fmt.Errorf("%w: </%s> at character %d closes nothing open", errUnbalancedTag, name, i)
					}
					stack = stack[:len(stack)-1]
					segs = append(segs, segment{kind: segClose, text: name, start: i, end: j})
				} else {
					stack = append(stack, name)
					segs = append(segs, segment{kind: segOpen, text: name, start: i, end: j})
				}
				i = j
				bufAt = i
				continue
			}
		}
		if buf.Len() == 0 {
			bufAt = i
		}
		buf.WriteRune(rs[i])
		i++
	}
	flush(len(rs))
	if len(stack) > 0 {
		return nil, fmt.Errorf("%w: <%s> is never closed", errUnbalancedTag, stack[len(stack)-1])
	}
	return segs, nil
}

// indexRune finds r in rs[from:from+max].
func indexRune(rs []rune, from int, r rune, max int) int {
	for j := from; j < len(rs) && j < from+max; j++ {
		if rs[j] == r {
			return j
		}
	}
	return -1
}

// angleTag matches "<name>" or "</name>" at rs[i], name being letters and
// hyphens; it returns the offset after '>'.
func angleTag(rs []rune, i int) (end int, closing bool, name string, ok bool) {
	j := i + 1
	if j < len(rs) && rs[j] == '/' {
		closing = true
		j++
	}
	start := j
	for j < len(rs) && j-start <= 32 && (rs[j] == '-' || (rs[j] >= 'a' && rs[j] <= 'z') || (rs[j] >= 'A' && rs[j] <= 'Z')) {
		j++
	}
	if j == start || j >= len(rs) || rs[j] != '>' {
		return 0, false, "", false
	}
	return j + 1, closing, strings.ToLower(string(rs[start:j])), true
}

// ssml renders segs as an SSML document for espeak-ng: inline tags become
// breaks, wrapping tags prosody or emphasis elements, text is escaped.
func ssml(segs []segment) string {
	var b strings.Builder
	b.WriteString("<speak>")
	for _, s := range segs {
		switch s.kind {
		case segText:
			b.WriteString(escapeXML(s.text))
		case segInline:
			fmt.Fprintf(&b, `<break time="%dms"/>`, inlineTags[s.text].Milliseconds())
		case segOpen:
			b.WriteString(wrapTags[s.text][0])
		case segClose:
			b.WriteString(wrapTags[s.text][1])
		}
	}
	b.WriteString("</speak>")
	return b.String()
}

// escapeXML escapes the five XML special characters.
func escapeXML(s string) string {
	return xmlEscaper.Replace(s)
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")
