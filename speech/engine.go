package speech

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrEngineUnavailable is returned when the configured engine cannot serve
// (a missing program, no STT engine configured, an unreachable upstream);
// the endpoints answer it with 503.
var ErrEngineUnavailable = errors.New("speech engine unavailable")

// Request is one synthesis.
type Request struct {
	// Text is what to say; it may hold speech tags.
	Text string
	// Voice is the voice (default eve).
	Voice Voice
	// Language is a code from Languages (canonical spelling), or one the
	// engine's Language resolved; "" is auto.
	Language string
	// Speed is 0.7 to 1.5; 0 means 1.0.
	Speed float64
	// SampleRate is the PCM rate wanted; 0 means 24000.
	SampleRate int
	// Normalize asks for written forms (numbers, symbols) in spoken form.
	Normalize bool
	// Timestamps asks for one time span per rune of Text.
	Timestamps bool
}

// Span is a start and end in seconds from the start of the audio.
type Span struct {
	Start, End float64
}

// Audio is synthesized speech: mono signed 16-bit PCM.
type Audio struct {
	PCM        []int16
	SampleRate int
	// Times has one span per rune of the request's Text when Timestamps
	// was asked for.
	Times []Span
}

// Duration is the length of the audio.
func (a *Audio) Duration() time.Duration {
	if a.SampleRate == 0 {
		return 0
	}
	return time.Duration(len(a.PCM)) * time.Second / time.Duration(a.SampleRate)
}

// Synthesizer turns text into speech.
type Synthesizer interface {
	// Synthesize renders the whole of req.Text.
	Synthesize(ctx context.Context, req *Request) (*Audio, error)
	// SynthesizeStream renders one utterance whose text arrives in pieces
	// on text (closed when the utterance ends), calling emit with PCM at
	// req.SampleRate as soon as each part is made. req.Text is ignored.
	SynthesizeStream(ctx context.Context, req *Request, text <-chan string, emit func(pcm []int16) error) error
	// Language resolves a language tag the spec's list lacks (the spec:
	// "other languages may work with varying accuracy") to the code the
	// engine speaks it by; ok is false when the engine does not.
	Language(tag string) (code string, ok bool)
}

// STTRequest is one transcription; exactly one of File and URL is set.
type STTRequest struct {
	// File is the uploaded audio (on disk), with its size in bytes.
	File     io.ReaderAt
	FileSize int64
	URL      string
	// Fields holds the form fields as the client sent them (validated),
	// keyterm repeated; they are forwarded unchanged.
	Fields []Field
	// Background marks a transcription nobody waits for (the STT
	// fallback's turns of a call record): the local decoder then runs
	// below the appliance's priority, so the calls' media goes first.
	Background bool
}

// Field is one form field.
type Field struct{ Name, Value string }

// Transcriber turns speech into text.
type Transcriber interface {
	// Transcribe transcribes a file or URL and returns the JSON transcript.
	Transcribe(ctx context.Context, req *STTRequest) (*Transcript, error)
	// OpenStream starts a streaming transcription with the client's
	// (validated) query string.
	OpenStream(ctx context.Context, rawQuery string) (TranscriptStream, error)
}

// TranscriptStream is one streaming transcription session.
type TranscriptStream interface {
	// SendAudio sends a binary audio frame.
	SendAudio(frame []byte) error
	// SendMessage sends a client JSON message (finalize, audio.done).
	SendMessage(msg []byte) error
	// Receive returns the next server JSON message; io.EOF when the
	// engine has closed the stream.
	Receive() ([]byte, error)
	// Close ends the session.
	Close() error
}

// Transcript is the spec's transcript object.
type Transcript struct {
	Text     string          `json:"text"`
	Language string          `json:"language"`
	Duration float64         `json:"duration"`
	Words    []Word          `json:"words,omitempty"`
	Channels []ChannelResult `json:"channels,omitempty"`
}

// Word is a word segment of a transcript.
type Word struct {
	Text       string  `json:"text"`
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
	Confidence float64 `json:"confidence,omitempty"`
	Speaker    *int    `json:"speaker,omitempty"`
}

// ChannelResult is the transcript of one channel.
type ChannelResult struct {
	Index    int    `json:"index"`
	Language string `json:"language"`
	Text     string `json:"text"`
	Words    []Word `json:"words"`
}
