package speech

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"switchboard/media"
	"switchboard/media/wav"
	"unicode"

	"golang.org/x/sync/errgroup"
)

// espeakWPM is espeak-ng's default speaking rate (words per minute), the
// rate of speed 1.0.
const espeakWPM = 175

// onsetLevel is the amplitude (about -40 dBFS) above which a clause's audio
// counts as speech when locating its onset and offset.
const onsetLevel = 320

// Espeak is the local synthesizer: it runs the espeak-ng program with SSML
// input (speech tags become breaks, prosody and emphasis) and reads its WAV
// output (22050 Hz mono), resampled to the requested rate.
type Espeak struct {
	path string
	// parallel bounds the espeak-ng processes one request runs at once.
	parallel int
	langs    espeakLanguages
}

// NewEspeak returns the engine running the espeak-ng binary at path
// ("espeak-ng" when empty, looked up in PATH at each use).
func NewEspeak(path string) *Espeak {
	if path == "" {
		path = "espeak-ng"
	}
	return &Espeak{path: path, parallel: 2}
}

// Check reports whether espeak-ng can be run.
func (e *Espeak) Check() error {
	_, err := e.bin()
	return err
}

func (e *Espeak) bin() (string, error) {
	p, err := exec.LookPath(e.path)
	if err != nil {
		return "", fmt.Errorf("%w: %w: %s not found; install the Debian package espeak-ng (make deps)", ErrEngineUnavailable, ErrToolMissing, e.path)
	}
	return p, nil
}

// voiceName is the espeak-ng voice for a request, e.g. "en+f3": a
// language of the spec's list speaks with its espeak-ng language, another
// one is already espeak-ng's code (Espeak.Language).
func voiceName(req *Request) string {
	lang := "en"
	if l, ok := lookupLanguage(req.Language); ok {
		lang = l.espeak
	} else if req.Language != "" {
		lang = req.Language
	}
	v := req.Voice
	if v.Variant == "" {
		v, _ = LookupVoice(DefaultVoice)
	}
	return lang + "+" + v.Variant
}

func wpm(speed float64) int {
	if speed == 0 {
		speed = 1
	}
	return int(math.Round(espeakWPM * speed))
}

func outRate(req *Request) int {
	if req.SampleRate == 0 {
		return DefaultFormat.SampleRate
	}
	return req.SampleRate
}

// run synthesizes one SSML document and returns PCM at rate.
func (e *Espeak) run(ctx context.Context, doc, voice string, wordsPerMinute, rate int) ([]int16, error) {
	bin, err := e.bin()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "--stdout", "-m", "-b", "1", "-v", voice, "-s", strconv.Itoa(wordsPerMinute), "--stdin")
	cmd.Stdin = strings.NewReader(doc)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("espeak-ng: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	a, err := wav.Decode(bytes.NewReader(out.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("espeak-ng output: %w", err)
	}
	return media.Convert(a.Mono(), a.SampleRate, rate), nil
}

// Phonemes returns espeak-ng's phoneme mnemonics (-x) for an SSML document,
// without synthesizing sound: what the engine will actually say.
func (e *Espeak) Phonemes(ctx context.Context, doc string, req *Request) (string, error) {
	bin, err := e.bin()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, "-q", "-x", "-m", "-b", "1", "-v", voiceName(req), "--stdin")
	cmd.Stdin = strings.NewReader(doc)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("espeak-ng -x: %w", err)
	}
	return string(out), nil
}

// Synthesize renders req.Text. Without timestamps the whole text is one
// espeak-ng run. With timestamps each clause (text between clause
// punctuation, or between tags) is a run of its own so that its start and
// end in the audio are measured, not guessed: a clause's characters span
// from its speech onset to its offset (found in the samples), shared out by
// letter count within the clause (espeak-ng's command line reports no
// finer timing); inline tags span the silence put in their place, wrapping
// tags are zero-length at their position.
func (e *Espeak) Synthesize(ctx context.Context, req *Request) (*Audio, error) {
	segs, err := parseTags(req.Text)
	if err != nil {
		return nil, err
	}
	rate := outRate(req)
	if !req.Timestamps {
		pcm, err := e.run(ctx, ssml(segs), voiceName(req), wpm(req.Speed), rate)
		if err != nil {
			return nil, err
		}
		return &Audio{PCM: pcm, SampleRate: rate}, nil
	}
	return e.synthesizeTimed(ctx, req, segs, rate)
}

// piece is a unit of timed synthesis.
type piece struct {
	segKind
	start, end int      // rune offsets
	text       string   // clause text
	open       []string // wrapping tags in force
	silence    int      // samples, for inline tags
	pcm        []int16
}

func (e *Espeak) synthesizeTimed(ctx context.Context, req *Request, segs []segment, rate int) (*Audio, error) {
	var (
		pieces []*piece
		open   []string
	)
	for _, s := range segs {
		switch s.kind {
		case segText:
			for _, c := range clauses(s.text) {
				pieces = append(pieces, &piece{segKind: segText, start: s.start + c[0], end: s.start + c[1],
					text: string([]rune(s.text)[c[0]:c[1]]), open: append([]string(nil), open...)})
			}
		case segInline:
			n := int(inlineTags[s.text].Seconds() * float64(rate))
			pieces = append(pieces, &piece{segKind: segInline, start: s.start, end: s.end, silence: n})
		case segOpen:
			open = append(open, s.text)
			pieces = append(pieces, &piece{segKind: segOpen, start: s.start, end: s.end})
		case segClose:
			open = open[:len(open)-1]
			pieces = append(pieces, &piece{segKind: segClose, start: s.start, end: s.end})
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.parallel)
	voice, w := voiceName(req), wpm(req.Speed)
	for _, p := range pieces {
		if p.segKind != segText || strings.TrimSpace(p.text) == "" {
			continue
		}
		g.Go(func() error {
			var b strings.Builder
			b.WriteString("<speak>")
			for _, t := range p.open {
				b.WriteString(wrapTags[t][0])
			}
			b.WriteString(escapeXML(p.text))
			for i := len(p.open) - 1; i >= 0; i-- {
				b.WriteString(wrapTags[p.open[i]][1])
			}
			b.WriteString("</speak>")
			pcm, err := e.run(gctx, b.String(), voice, w, rate)
			p.pcm = pcm
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	n := len([]rune(req.Text))
	times := make([]Span, n)
	var pcm []int16
	sec := func(samples int) float64 { return float64(samples) / float64(rate) }
	for _, p := range pieces {
		at := len(pcm)
		switch p.segKind {
		case segInline:
			pcm = append(pcm, make([]int16, p.silence)...)
			for i := p.start; i < p.end; i++ {
				times[i] = Span{sec(at), sec(at + p.silence)}
			}
		case segOpen, segClose:
			for i := p.start; i < p.end; i++ {
				times[i] = Span{sec(at), sec(at)}
			}
		case segText:
			pcm = append(pcm, p.pcm...)
			on, off := speechBounds(p.pcm)
			spreadByLetters(times[p.start:p.end], []rune(p.text), sec(at+on), sec(at+off), sec(at), sec(len(pcm)))
		}
	}
	return &Audio{PCM: pcm, SampleRate: rate, Times: times}, nil
}

// clauses splits text into [start, end) rune ranges that end after clause
// punctuation followed by a space, or after a newline.
func clauses(text string) [][2]int {
	rs := []rune(text)
	var out [][2]int
	start := 0
	for i, r := range rs {
		end := false
		switch r {
		case '\n':
			end = true
		case ',', '.', ';', ':', '!', '?':
			end = i+1 < len(rs) && unicode.IsSpace(rs[i+1])
		}
		if end {
			// Keep the following spaces in this clause.
			j := i + 1
			for j < len(rs) && unicode.IsSpace(rs[j]) && rs[j] != '\n' {
				j++
			}
			if j > start && i >= start {
				out = append(out, [2]int{start, j})
				start = j
			}
		}
	}
	if start < len(rs) {
		out = append(out, [2]int{start, len(rs)})
	}
	return out
}

// speechBounds finds the first and last sample above onsetLevel.
func speechBounds(pcm []int16) (on, off int) {
	on, off = 0, len(pcm)
	for on < len(pcm) && abs16(pcm[on]) < onsetLevel {
		on++
	}
	for off > on && abs16(pcm[off-1]) < onsetLevel {
		off--
	}
	if on >= off {
		return 0, len(pcm)
	}
	return on, off
}

func abs16(s int16) int {
	if s < 0 {
		return -int(s)
	}
	return int(s)
}

// spreadByLetters gives letters and digits consecutive shares of [on, off]
// and every other rune a zero-length span where it stands; a clause with
// no letters spans the whole piece.
func spreadByLetters(times []Span, rs []rune, on, off, pieceStart, pieceEnd float64) {
	letters := 0
	for _, r := range rs {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			letters++
		}
	}
	if letters == 0 {
		for i := range times {
			times[i] = Span{pieceStart, pieceEnd}
		}
		return
	}
	step := (off - on) / float64(letters)
	t := on
	for i, r := range rs {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			times[i] = Span{t, t + step}
			t += step
		} else {
			times[i] = Span{t, t}
		}
	}
}
