package speech

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"switchboard/media"
	"switchboard/media/wav"
)

// The local speech-to-text engine: CMU PocketSphinx with its US English
// model, both from Debian (pocketsphinx, pocketsphinx-en-us). It runs the
// pocketsphinx_continuous program on a 16 kHz WAV file, the way the local
// TTS runs espeak-ng, and reads its hypotheses with word times
// (-time yes). No account, no network; accuracy is far below a provider's
// (docs/realtime.md gives the word error rate measured on espeak-ng speech).

// EnginePocketsphinx names the local STT engine.
const EnginePocketsphinx = "pocketsphinx"

// sphinxRate is the rate of the en-us acoustic model.
const sphinxRate = 16000

// maxLocalAudioBytes bounds the upload the local engine decodes in memory
// (about 100 minutes of 16-bit mono audio at 16 kHz).
const maxLocalAudioBytes = 200 << 20

// fillerWords are removed from transcripts unless filler_words=true.
var fillerWords = map[string]bool{"uh": true, "um": true, "er": true, "ah": true, "hmm": true, "mm": true}

// InputError is a request the engine cannot serve as asked (a format or
// option it does not support); the endpoints answer it with 400 naming
// Param.
type InputError struct {
	Param, Message string
}

func (e *InputError) Error() string { return e.Message }

// decoderNice is how much lower than the appliance's the scheduling
// priority (nice value) of a background decoder process is: a decoder
// takes a core for a third of its audio's length, and the STT fallback
// keeps decoders busy while callers speak, so on the cores the calls'
// media share it takes what they leave (10 nice steps weigh about a tenth
// when both want a core). A client of /v1/stt waits for its transcript:
// its decoder keeps the appliance's priority.
const decoderNice = 10

// Pocketsphinx is the local STT engine.
type Pocketsphinx struct {
	path    string
	tempDir string
	// sem bounds the decoder processes running at once (each takes a core
	// for about a third of the audio's duration).
	sem chan struct{}
	// background is the scheduling policy of background decodes
	// (PriorityIdle, PriorityNice or PriorityNormal).
	background string
}

// The scheduling policies of a background decoder (speech.stt_fallback_priority).
const (
	// PriorityIdle runs it under SCHED_IDLE and decoderNice steps below
	// the appliance: it takes only CPU time nothing else wants.
	PriorityIdle = "idle"
	// PriorityNice runs it decoderNice steps below the appliance: it
	// gets a share of a busy machine, and may make frames late.
	PriorityNice = "nice"
	// PriorityNormal runs it at the appliance's own priority.
	PriorityNormal = "normal"
)

// checkPriority refuses a policy that is none of the three.
func checkPriority(policy string) error {
	switch policy {
	case PriorityIdle, PriorityNice, PriorityNormal:
		return nil
	}
	return fmt.Errorf("stt fallback priority %q: want idle, nice or normal", policy)
}

// NewPocketsphinx returns the engine running the pocketsphinx_continuous
// binary at path ("pocketsphinx_continuous" in PATH when empty), spooling
// audio to tempDir (os.TempDir() when empty), with at most parallel
// decoders at once (1 when < 1); background decodes run under
// PriorityIdle.
func NewPocketsphinx(path, tempDir string, parallel int) *Pocketsphinx {
	if path == "" {
		path = "pocketsphinx_continuous"
	}
	return &Pocketsphinx{path: path, tempDir: tempDir, sem: make(chan struct{}, max(parallel, 1)), background: PriorityIdle}
}

// Check reports whether the decoder can be run.
func (p *Pocketsphinx) Check() error {
	_, err := p.bin()
	return err
}

func (p *Pocketsphinx) bin() (string, error) {
	b, err := exec.LookPath(p.path)
	if err != nil {
		return "", fmt.Errorf("%w: %w: %s not found; install the Debian packages pocketsphinx and pocketsphinx-en-us (make deps)",
			ErrEngineUnavailable, ErrToolMissing, p.path)
	}
	return b, nil
}

// decode transcribes 16 kHz mono PCM; word times are shifted by offset
// seconds. It waits for a free decoder; a background decode runs under
// the engine's background policy.
func (p *Pocketsphinx) decode(ctx context.Context, pcm []int16, offset float64, fillers, background bool) ([]Word, error) {
	if len(pcm) == 0 {
		return nil, nil
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.sem }()
	return p.run(ctx, pcm, offset, fillers, background)
}

// tryDecode is decode when a decoder is free at once; ok is false when
// none is (an interim hypothesis is worth no wait: it never holds up a
// final one).
func (p *Pocketsphinx) tryDecode(ctx context.Context, pcm []int16, offset float64, fillers bool) (ws []Word, ok bool, err error) {
	select {
	case p.sem <- struct{}{}:
	default:
		return nil, false, nil
	}
	defer func() { <-p.sem }()
	ws, err = p.run(ctx, pcm, offset, fillers, false)
	return ws, true, err
}

// run runs pocketsphinx_continuous on pcm (the caller holds a decoder),
// under the engine's background policy when background.
func (p *Pocketsphinx) run(ctx context.Context, pcm []int16, offset float64, fillers, background bool) ([]Word, error) {
	bin, err := p.bin()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(p.tempDir, "stt-*.wav")
	if err != nil {
		return nil, fmt.Errorf("pocketsphinx input: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(wav.Encode(pcm, sphinxRate))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("pocketsphinx input: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "-infile", f.Name(), "-time", "yes", "-logfn", os.DevNull)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pocketsphinx: %w", err)
	}
	if background {
		_ = lowerPriority(cmd.Process.Pid, p.background) // best effort: it decodes either way
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("pocketsphinx: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return parseSphinx(&out, offset, fillers), nil
}

// parseSphinx reads pocketsphinx_continuous -time yes output: per
// utterance a line of text, then one line per token "word start end
// posterior". Sentence marks, silences and noises are dropped, alternate
// pronunciations ("read(2)") lose their number, and filler words go
// unless fillers is set.
func parseSphinx(r io.Reader, offset float64, fillers bool) []Word {
	var words []Word
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			continue
		}
		start, err1 := strconv.ParseFloat(f[1], 64)
		end, err2 := strconv.ParseFloat(f[2], 64)
		conf, err3 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		w := f[0]
		if i := strings.IndexByte(w, '('); i > 0 {
			w = w[:i]
		}
		if w == "" || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "+") {
			continue
		}
		if !fillers && fillerWords[w] {
			continue
		}
		words = append(words, Word{Text: w, Start: offset + start, End: offset + end, Confidence: conf})
	}
	return words
}

func wordsText(ws []Word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Text
	}
	return strings.Join(parts, " ")
}

// Transcribe transcribes an uploaded WAV file or raw pcm, mulaw or alaw
// audio (each channel on its own with multichannel=true). What it cannot
// do is refused with an InputError naming the field, never accepted and
// dropped: a URL, other containers, languages other than English,
// diarize, keyterm and format (inverse text normalization). The
// transcript's language is empty, as the spec has it ("detected ISO
// 639-1 code; currently always empty").
func (p *Pocketsphinx) Transcribe(ctx context.Context, req *STTRequest) (*Transcript, error) {
	fields := map[string]string{}
	for _, f := range req.Fields {
		fields[f.Name] = f.Value
	}
	if err := checkEnglish(fields["language"]); err != nil {
		return nil, err
	}
	switch {
	case isTrue(fields["diarize"]):
		return nil, errCannot("diarize", "cannot tell speakers apart")
	case fields["keyterm"] != "":
		return nil, errCannot("keyterm", "cannot bias its search towards key terms")
	case isTrue(fields["format"]):
		return nil, errCannot("format", "has no inverse text normalization (numbers stay words)")
	}
	if req.File == nil {
		return nil, &InputError{Param: "url", Message: "the local pocketsphinx engine transcribes uploaded files only (url needs the upstream engine)"}
	}
	if req.FileSize > maxLocalAudioBytes {
		return nil, &InputError{Param: "file", Message: fmt.Sprintf("the local pocketsphinx engine takes files up to %d bytes", maxLocalAudioBytes)}
	}
	channels, rate, err := readAudio(req, fields)
	if err != nil {
		return nil, err
	}
	fillers := isTrue(fields["filler_words"])
	t := &Transcript{}
	if len(channels) > 0 && rate > 0 {
		t.Duration = float64(len(channels[0])) / float64(rate)
	}
	if isTrue(fields["multichannel"]) {
		var texts []string
		for i, ch := range channels {
			ws, err := p.decode(ctx, media.Convert(ch, rate, sphinxRate), 0, fillers, req.Background)
			if err != nil {
				return nil, err
			}
			cr := ChannelResult{Index: i, Text: wordsText(ws), Words: ws}
			if cr.Words == nil {
				cr.Words = []Word{}
			}
			t.Channels = append(t.Channels, cr)
			texts = append(texts, cr.Text)
		}
		t.Text = strings.Join(texts, " ")
		return t, nil
	}
	ws, err := p.decode(ctx, media.Convert(mixdown(channels), rate, sphinxRate), 0, fillers, req.Background)
	if err != nil {
		return nil, err
	}
	t.Words, t.Text = ws, wordsText(ws)
	return t, nil
}

// isTrue reads a validated boolean form field (true or false, in any
// case).
func isTrue(v string) bool { return strings.EqualFold(v, "true") }

// errCannot refuses an option the local engine cannot honour.
func errCannot(param, why string) error {
	return &InputError{Param: param, Message: fmt.Sprintf("%s: the local pocketsphinx engine %s; it needs the upstream STT engine (speech.stt_engine: upstream)", param, why)}
}

func checkEnglish(lang string) error {
	l := strings.ToLower(lang)
	if l == "" || l == "en" || strings.HasPrefix(l, "en-") || strings.HasPrefix(l, "en_") {
		return nil
	}
	return &InputError{Param: "language", Message: fmt.Sprintf("the local pocketsphinx engine transcribes English (en) only, not %q", lang)}
}

// readAudio decodes the upload into one PCM slice per channel and its
// rate.
func readAudio(req *STTRequest, fields map[string]string) ([][]int16, int, error) {
	head := make([]byte, sniffLen)
	n, _ := req.File.ReadAt(head, 0)
	r := io.NewSectionReader(req.File, 0, req.FileSize)
	switch c := detectContainer(head[:n]); c {
	case "wav":
		a, err := wav.Decode(r)
		if err != nil {
			return nil, 0, &InputError{Param: "file", Message: "the WAV file cannot be read: " + err.Error()}
		}
		return deinterleave(a.Samples, a.Channels), a.SampleRate, nil
	case "":
	default:
		return nil, 0, &InputError{Param: "file", Message: fmt.Sprintf("the local pocketsphinx engine reads wav and raw pcm, mulaw or alaw, not %s (use the upstream engine)", c)}
	}
	rate, _ := strconv.Atoi(fields["sample_rate"])
	if rate == 0 {
		rate, _ = strconv.Atoi(fields["sample_rate_hertz"])
	}
	nch := 1
	if v, err := strconv.Atoi(fields["channels"]); err == nil && v > 0 {
		nch = v
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, fmt.Errorf("read upload: %w", err)
	}
	var pcm []int16
	switch fields["audio_format"] {
	case "mulaw":
		pcm = media.PCMU.DecodeFrame(nil, b)
	case "alaw":
		pcm = media.PCMA.DecodeFrame(nil, b)
	default:
		pcm = media.DecodePCM16LE(nil, b[:len(b)&^1])
	}
	return deinterleave(pcm, nch), rate, nil
}

func deinterleave(s []int16, channels int) [][]int16 {
	if channels <= 1 {
		return [][]int16{s}
	}
	frames := len(s) / channels
	out := make([][]int16, channels)
	for c := range out {
		out[c] = make([]int16, frames)
		for i := 0; i < frames; i++ {
			out[c][i] = s[i*channels+c]
		}
	}
	return out
}

func mixdown(chs [][]int16) []int16 {
	if len(chs) == 1 {
		return chs[0]
	}
	out := make([]int16, len(chs[0]))
	for i := range out {
		sum := 0
		for _, ch := range chs {
			sum += int(ch[i])
		}
		out[i] = int16(sum / len(chs))
	}
	return out
}

// errStreamClosed is returned by a local stream used after Close.
var errStreamClosed = errors.New("transcription stream closed")
