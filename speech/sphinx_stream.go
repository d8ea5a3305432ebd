package speech

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/media"
)

// Streaming with the local engine: an energy detector splits the audio
// into utterances (a pause of endpointing ms, at least minEndpointing,
// ends one), and each utterance is decoded as soon as it ends, in order,
// on the stream's own worker: the client gets transcript.created at once,
// a final transcript.partial per utterance (is_final and speech_final; an
// utterance cut at maxUtterance is only chunk final: speech_final false)
// and transcript.done (duration always) after audio.done.
//
// Interim results (interim_results=true): every interimEvery of an
// utterance's audio, the worker decodes the utterance so far, as it is
// when the worker gets to it, and sends the hypothesis as a
// transcript.partial with is_final false. pocketsphinx_continuous gives no
// partial hypothesis of its own, so each interim is a run of the decoder
// (most of a second of CPU: the model is loaded each time); an interim is
// skipped when no decoder is free, the interims due while the worker is
// busy make one, and an utterance that has ended is decoded whole first.
const (
	// minEndpointing is the shortest pause that ends an utterance: the
	// energy detector would otherwise split words at their stops.
	minEndpointing = 400 * time.Millisecond
	// streamPreRoll is kept before the detected start of speech.
	streamPreRoll = 200 * time.Millisecond
	// maxUtterance forces the end of an utterance that never pauses.
	maxUtterance = 30 * time.Second
	// vadFrame is the detector's frame.
	vadFrame = 20 * time.Millisecond
	// vadLevel is the RMS (about -38 dBFS) above which a frame is speech.
	vadLevel = 400
	// streamJobs bounds the utterances waiting for the decoder.
	streamJobs = 16
	// interimEvery is how much of an utterance's audio comes between
	// interim hypotheses (the spec's "about every 500 ms").
	interimEvery = 500 * time.Millisecond
)

// sttEvent is a server message of the streaming transcription. Times are
// seconds with two decimals.
type sttEvent struct {
	Type        string   `json:"type"`
	Text        *string  `json:"text,omitempty"`
	IsFinal     *bool    `json:"is_final,omitempty"`
	SpeechFinal *bool    `json:"speech_final,omitempty"`
	Start       *float64 `json:"start,omitempty"`
	Duration    *float64 `json:"duration,omitempty"`
	Words       []Word   `json:"words,omitempty"`
}

// partialEvent is a transcript.partial of the utterance that started at
// start and lasts dur seconds.
func partialEvent(ws []Word, start, dur float64, isFinal, speechFinal bool) sttEvent {
	roundWords(ws)
	text := wordsText(ws)
	start, dur = round2(start), round2(dur)
	return sttEvent{Type: "transcript.partial", Text: &text, IsFinal: &isFinal, SpeechFinal: &speechFinal,
		Start: &start, Duration: &dur, Words: ws}
}

type sttJob struct {
	pcm     []int16 // at the stream's rate
	start   float64 // seconds from the start of the stream
	last    bool    // audio.done: transcript.done follows
	chunk   bool    // cut at maxUtterance: the speech goes on
	interim bool    // the utterance so far, for an interim hypothesis
}

type sphinxStream struct {
	p        *Pocketsphinx
	ctx      context.Context
	cancel   context.CancelFunc
	rate     int
	encoding string
	endpoint int // samples of pause that end an utterance
	interim  int // samples of an utterance between interims; 0: none
	fillers  bool
	jobs     chan sttJob
	wake     chan struct{} // an interim is due
	out      chan []byte
	wg       sync.WaitGroup

	mu       sync.Mutex
	odd      []byte  // a PCM byte left over from the last frame
	frame    []int16 // the detector's partial frame
	pre      []int16 // pre-roll while nobody speaks
	utt      []int16 // the utterance under way
	uttAt    int64   // sample index of utt[0]
	total    int64   // samples through the detector (whole frames)
	received int64   // every sample received, a last partial frame too
	speech   bool    // utt holds speech
	silence  int     // samples of pause since the last speech frame
	done     bool    // audio.done received
	// nextInterim is the length of utt at which an interim is due;
	// interimDue says one is; pending counts the utterances cut and not
	// yet taken by the worker (an interim of the next one waits for them).
	nextInterim int
	interimDue  bool
	pending     int
}

// OpenStream starts a local streaming transcription with the client's
// query (sample_rate, encoding, endpointing, interim_results,
// filler_words, language). What the engine cannot do is refused with an
// InputError naming the field: multichannel audio, diarize, smart_turn,
// keyterm.
func (p *Pocketsphinx) OpenStream(ctx context.Context, rawQuery string) (TranscriptStream, error) {
	if _, err := p.bin(); err != nil {
		return nil, err
	}
	q, _ := url.ParseQuery(rawQuery)
	if err := checkEnglish(q.Get("language")); err != nil {
		return nil, err
	}
	on := func(name string) bool { v, _ := strconv.ParseBool(q.Get(name)); return v }
	switch {
	case on("multichannel"):
		return nil, errCannot("multichannel", "streams one channel")
	case on("diarize"):
		return nil, errCannot("diarize", "cannot tell speakers apart")
	case q.Has("smart_turn"):
		return nil, errCannot("smart_turn", "has no end-of-turn model")
	case q.Has("keyterm"):
		return nil, errCannot("keyterm", "cannot bias its search towards key terms")
	}
	rate := sphinxRate
	if v, err := strconv.Atoi(q.Get("sample_rate")); err == nil {
		rate = v
	}
	endpoint := minEndpointing
	if v, err := strconv.Atoi(q.Get("endpointing")); err == nil {
		endpoint = max(endpoint, time.Duration(v)*time.Millisecond)
	}
	fillers, _ := strconv.ParseBool(q.Get("filler_words"))
	enc := q.Get("encoding")
	if enc == "" {
		enc = "pcm"
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &sphinxStream{p: p, ctx: ctx, cancel: cancel, rate: rate, encoding: enc, fillers: fillers,
		endpoint: samplesOf(endpoint, rate), jobs: make(chan sttJob, streamJobs), wake: make(chan struct{}, 1),
		out: make(chan []byte, streamJobs+2)}
	if on("interim_results") {
		s.interim = samplesOf(interimEvery, rate)
	}
	s.emit(sttEvent{Type: "transcript.created"})
	s.wg.Add(1)
	go s.work()
	return s, nil
}

func samplesOf(d time.Duration, rate int) int {
	return int(int64(d) * int64(rate) / int64(time.Second))
}

// SendAudio takes a binary frame in the stream's encoding.
func (s *sphinxStream) SendAudio(frame []byte) error {
	var pcm []int16
	switch s.encoding {
	case "mulaw":
		pcm = media.PCMU.DecodeFrame(nil, frame)
	case "alaw":
		pcm = media.PCMA.DecodeFrame(nil, frame)
	default:
		s.mu.Lock()
		b := append(s.odd, frame...)
		s.odd = append([]byte(nil), b[len(b)&^1:]...)
		s.mu.Unlock()
		pcm = media.DecodePCM16LE(nil, b[:len(b)&^1])
	}
	return s.add(pcm)
}

// add runs the detector over pcm and queues the utterances it ends.
func (s *sphinxStream) add(pcm []int16) error {
	n := samplesOf(vadFrame, s.rate)
	var ready []sttJob
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	s.received += int64(len(pcm))
	s.frame = append(s.frame, pcm...)
	for len(s.frame) >= n {
		f := s.frame[:n]
		if job, ok := s.step(f); ok {
			ready = append(ready, job)
		}
		s.frame = s.frame[n:]
	}
	s.frame = append([]int16(nil), s.frame...)
	due := s.interimDue
	s.mu.Unlock()
	if err := s.queue(ready...); err != nil {
		return err
	}
	if due {
		// After the utterances that ended: the worker decodes those first.
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// step takes one detector frame (s.mu held) and returns the utterance it
// ends, if any.
func (s *sphinxStream) step(f []int16) (sttJob, bool) {
	loud := media.RMS(f) >= vadLevel
	s.total += int64(len(f))
	if !s.speech {
		if !loud {
			s.pre = append(s.pre, f...)
			if k := len(s.pre) - samplesOf(streamPreRoll, s.rate); k > 0 {
				s.pre = s.pre[k:]
			}
			return sttJob{}, false
		}
		s.speech, s.silence = true, 0
		s.utt = append(append(s.utt[:0], s.pre...), f...)
		s.uttAt = s.total - int64(len(s.utt))
		s.pre = s.pre[:0]
		s.nextInterim = len(s.utt) + s.interim
		return sttJob{}, false
	}
	s.utt = append(s.utt, f...)
	if loud {
		s.silence = 0
	} else {
		s.silence += len(f)
	}
	if s.silence >= s.endpoint {
		return s.cut(false), true
	}
	if len(s.utt) >= samplesOf(maxUtterance, s.rate) {
		job := s.cut(false)
		job.chunk = true
		return job, true
	}
	if s.interim > 0 && len(s.utt) >= s.nextInterim {
		s.nextInterim += s.interim
		s.interimDue = true
	}
	return sttJob{}, false
}

// cut ends the utterance under way (s.mu held).
func (s *sphinxStream) cut(last bool) sttJob {
	job := sttJob{pcm: s.utt, start: float64(s.uttAt) / float64(s.rate), last: last}
	if !s.speech {
		job.pcm = nil
	}
	s.utt, s.speech, s.silence, s.interimDue = nil, false, 0, false
	s.pending++
	return job
}

func (s *sphinxStream) queue(jobs ...sttJob) error {
	for _, j := range jobs {
		select {
		case s.jobs <- j:
		case <-s.ctx.Done():
			return errStreamClosed
		}
	}
	return nil
}

// SendMessage takes finalize (the utterance under way ends now) and
// audio.done (the last utterance ends, then transcript.done).
func (s *sphinxStream) SendMessage(msg []byte) error {
	var m sttClientMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil // the handler answered it already
	}
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	var job sttJob
	switch strings.ToLower(m.Type) {
	case "finalize":
		job = s.cut(false)
	case "audio.done":
		job = s.cut(true)
		s.done = true
	default:
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return s.queue(job)
}

// work decodes the utterances in order and emits their transcripts, and
// the interim hypotheses in between.
func (s *sphinxStream) work() {
	defer s.wg.Done()
	defer close(s.out)
	var all []Word
	for {
		job, ok := s.next()
		if !ok {
			return
		}
		pcm := media.Convert(job.pcm, s.rate, sphinxRate)
		dur := float64(len(job.pcm)) / float64(s.rate)
		if job.interim {
			ws, ran, err := s.p.tryDecode(s.ctx, pcm, job.start, s.fillers)
			if err != nil && s.ctx.Err() != nil {
				return
			}
			// A failed interim is no loss: the final decode says.
			if ran && err == nil && len(ws) > 0 {
				s.emit(partialEvent(ws, job.start, dur, false, false))
			}
			continue
		}
		ws, err := s.p.decode(s.ctx, pcm, job.start, s.fillers, false)
		if err != nil {
			if s.ctx.Err() == nil {
				s.emitRaw(newWSError("transcription_failed", err.Error()))
			}
			return
		}
		ev := partialEvent(ws, job.start, dur, true, !job.chunk)
		all = append(all, ev.Words...)
		s.emit(ev)
		if job.last {
			s.mu.Lock()
			total := round2(float64(s.received) / float64(s.rate))
			s.mu.Unlock()
			full := wordsText(all)
			s.emit(sttEvent{Type: "transcript.done", Text: &full, Duration: &total, Words: all})
			return
		}
	}
}

// next returns the worker's next job: an utterance that ended, else an
// interim of the one under way when one is due; ok is false once the
// stream is closed.
func (s *sphinxStream) next() (job sttJob, ok bool) {
	for {
		select {
		case job := <-s.jobs:
			return s.took(job), true
		default:
		}
		if job, ok := s.takeInterim(); ok {
			return job, true
		}
		select {
		case job := <-s.jobs:
			return s.took(job), true
		case <-s.wake:
		case <-s.ctx.Done():
			return sttJob{}, false
		}
	}
}

// took counts an utterance that ended as taken by the worker.
func (s *sphinxStream) took(job sttJob) sttJob {
	s.mu.Lock()
	s.pending--
	s.mu.Unlock()
	return job
}

// takeInterim returns the utterance under way as it is now, when an
// interim of it is due and no utterance that ended before it waits.
func (s *sphinxStream) takeInterim() (sttJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.interimDue || !s.speech || s.pending > 0 {
		return sttJob{}, false
	}
	s.interimDue = false
	return sttJob{pcm: slices.Clone(s.utt), start: float64(s.uttAt) / float64(s.rate), interim: true}, true
}

func (s *sphinxStream) emit(ev sttEvent) {
	b, _ := json.Marshal(ev)
	s.emitRaw(b)
}

func (s *sphinxStream) emitRaw(v any) {
	var b []byte
	switch m := v.(type) {
	case []byte:
		b = m
	default:
		b, _ = json.Marshal(m)
	}
	select {
	case s.out <- b:
	case <-s.ctx.Done():
	}
}

// Receive returns the next server message; io.EOF after transcript.done.
func (s *sphinxStream) Receive() ([]byte, error) {
	select {
	case b, ok := <-s.out:
		if !ok {
			if s.ctx.Err() != nil {
				return nil, errStreamClosed
			}
			return nil, io.EOF
		}
		return b, nil
	case <-s.ctx.Done():
		return nil, errStreamClosed
	}
}

// Close ends the stream and waits for its worker; it is idempotent.
func (s *sphinxStream) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}
