package call

import (
	"context"
	"errors"
	"time"
)

// Conversation is the other side of a phone call. Prepare runs while the
// caller hears ringing; the call is answered once it returns nil. Audio is
// the hot path: it receives the caller's audio at the conversation's rate
// (PCM16 little-endian mono), on the media goroutine, and must neither
// block nor keep the slice. Run drives the conversation after answer until
// it ends or ctx (the call) is done.
type Conversation interface {
	Prepare(ctx context.Context) error
	Audio(pcm []byte)
	Run(ctx context.Context, phone Phone) error
	Close() error
}

// A conversation may implement AudioRate() int to take audio at another
// rate than the manager's (8000 for a provider that speaks G.711).

// Phone is what a conversation sees of its call. Play, Flush and Pending
// are called from the conversation's own goroutine.
type Phone interface {
	// ID is the call id.
	ID() string
	// Rate is the sample rate of the audio given to Play and Audio.
	Rate() int
	// Play queues audio (PCM16LE at Rate) tagged with an item id; the
	// pacer sends it one frame per ptime.
	Play(itemID string, pcm []byte)
	// Flush drops everything queued within one frame and reports which
	// item was playing and how many ms of it the caller heard (barge-in).
	Flush() (itemID string, playedMs int)
	// Pending is how much queued audio has not been sent yet.
	Pending() time.Duration
	// Hangup ends the call with a BYE carrying reason.
	Hangup(reason string)
	// Transfer sends a SIP REFER to the caller's side and waits for the
	// outcome.
	Transfer(ctx context.Context, target string) error
	// Note adds an entry to the call record (transcripts, tool calls, …).
	Note(n Note)
	// SpeechStarted tells the call the caller started speaking (the
	// DTMF buffer flushes then).
	SpeechStarted()
	// SendDTMF plays digits to the caller's side (to navigate an IVR)
	// and returns once they are sent.
	SendDTMF(ctx context.Context, digits string) error
}

// Note is one entry of a call record: a transcript line of either side, a
// tool call and its result, a DTMF key, a transfer, a webhook attempt.
type Note struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	// Role is "user" or "assistant" for transcripts.
	Role string `json:"role,omitempty"`
	Text string `json:"text,omitempty"`
	// Data carries the kind's structured details (tool arguments, …).
	Data any `json:"data,omitempty"`
}

// Note kinds.
const (
	NoteTranscript = "transcript"
	NoteToolCall   = "tool_call"
	NoteToolResult = "tool_result"
	NoteDTMF       = "dtmf"
	NoteTransfer   = "transfer"
	NoteWebhook    = "webhook"
	NoteEvent      = "event"
)

// BeforeAnswerer is a conversation that queues audio before the 200 OK
// (its greeting): the media is held until the answer, so that audio is the
// first packet the caller gets. BeforeAnswer runs on the call's goroutine,
// after Prepare and before Run, and must be quick.
type BeforeAnswerer interface {
	BeforeAnswer(phone Phone)
}

// Router picks the conversation of a call from its route. It may reject
// the call with an error carrying a SIP status (see RejectError).
type Router interface {
	Conversation(ctx context.Context, c *Call) (Conversation, error)
}

// RejectError tells the Manager which SIP status to refuse a call with.
type RejectError struct {
	Status int
	Reason string
	Err    error
}

func (e *RejectError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *RejectError) Unwrap() error { return e.Err }

// ErrHangup is the cause of a call ended by its conversation.
var ErrHangup = errors.New("call: conversation hung up")

// HangupError is returned by Conversation.Run when the conversation ends
// the call on purpose; Reason goes into the BYE's Reason header.
type HangupError struct{ Reason string }

func (e *HangupError) Error() string { return "hang up: " + e.Reason }

// Is makes errors.Is(err, ErrHangup) true.
func (e *HangupError) Is(target error) bool { return target == ErrHangup }

// Hangup returns the error a conversation ends the call with.
func Hangup(reason string) error { return &HangupError{Reason: reason} }
