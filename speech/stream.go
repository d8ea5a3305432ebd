package speech

import (
	"context"
	"unicode"
)

// SynthesizeStream speaks text as it arrives: each time the buffered text
// holds a complete sentence with its tags balanced, that part is rendered
// and emitted; the rest is rendered when text closes.
func (e *Espeak) SynthesizeStream(ctx context.Context, req *Request, text <-chan string, emit func(pcm []int16) error) error {
	return streamBySentence(ctx, req, text, emit, func(ctx context.Context, r *Request) ([]int16, error) {
		a, err := e.Synthesize(ctx, r)
		if err != nil {
			return nil, err
		}
		return a.PCM, nil
	})
}

// streamBySentence buffers deltas and renders the longest prefix ending at
// a sentence boundary that parses on its own (tags balanced).
func streamBySentence(ctx context.Context, req *Request, text <-chan string, emit func([]int16) error,
	render func(context.Context, *Request) ([]int16, error)) error {
	var buf []rune
	speak := func(rs []rune) error {
		if len(rs) == 0 {
			return nil
		}
		r := *req
		r.Text, r.Timestamps = string(rs), false
		pcm, err := render(ctx, &r)
		if err != nil {
			return err
		}
		return emit(pcm)
	}
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case d, ok := <-text:
			if !ok {
				return speak(buf)
			}
			buf = append(buf, []rune(d)...)
			if cut := sentenceCut(buf); cut > 0 {
				if err := speak(buf[:cut]); err != nil {
					return err
				}
				buf = append([]rune(nil), buf[cut:]...)
			}
		}
	}
}

// sentenceCut returns the end of the longest prefix of rs that ends after
// sentence punctuation followed by white space and whose speech tags are
// balanced, or 0.
func sentenceCut(rs []rune) int {
	for i := len(rs) - 2; i >= 0; i-- {
		switch rs[i] {
		case '.', '!', '?', '\n':
		default:
			continue
		}
		if !unicode.IsSpace(rs[i+1]) {
			continue
		}
		if _, err := parseTags(string(rs[:i+1])); err == nil {
			return i + 2
		}
	}
	return 0
}
