package call

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"switchboard/dtmf"
	"switchboard/media"
)

// Conversation is the model side of a call (package conversation makes
// them: an agent's bridge, a controller's session, the line-test
// loopback). The Router makes it with the call's Phone, which it keeps:
// that is the only place a conversation gets its call. The Call uses it
// in this order: Format and Keypad once, Prepare while the caller hears
// ringing (the call is answered once it returns nil), Run after the
// answer until the call ends, Close once. Audio and Key arrive from other
// goroutines meanwhile.
type Conversation interface {
	// Format is the audio the conversation takes (Audio) and gives
	// (Speaker.Play); LegFormat takes the caller's own.
	Format() media.Format
	// Keypad says how the caller's keys are handled.
	Keypad() KeypadSettings
	// Recording says the conversation asks for the call to be recorded
	// (an agent's recording setting); the number may ask too.
	Recording() bool
	// Prepare readies the conversation (the model session) while the
	// caller hears ringing. It bounds its own wait and may queue audio
	// with the Speaker: it is the first audio the caller hears.
	Prepare(ctx context.Context) error
	// Audio is the caller's audio in Format, on the media goroutine: it
	// must neither block nor keep the slice.
	Audio(b []byte)
	// Key is each key the caller pressed, once, as it is pressed (the
	// digit is there even under the redact policy; the call has noted
	// it, redacted as the policy says). The conversation's own loop
	// buffers keys and flushes them to the model (on #, after the idle
	// time, when the caller speaks) and carries out the route policy. It
	// must not block.
	Key(ev dtmf.Event)
	// Run drives the conversation after the answer until it ends or ctx
	// (the call) is done. A HangupError ends the call with its reason.
	// On a call the appliance placed, the conversation speaks first only
	// once Opened says so. ctx may also end before the call does, with a
	// cause that wraps ErrConversationEnded (Call.EndConversation: a
	// supervisor took over): the conversation then releases its model
	// session and returns; the call goes on without it, and Close comes
	// once the call is over.
	Run(ctx context.Context) error
	// Progress reports a step of a placed call's dial (ringing, answered,
	// busy, no-answer, failed, canceled) and the answering-machine
	// detection's verdict; it must not block.
	Progress(p Progress)
	// Opened tells the conversation of a placed call that the callee is
	// ready to hear it (their greeting is over, or the machine's beep
	// sounded): it speaks first now. It comes once, after Run started,
	// and must not block.
	Opened(o Opening)
	// Close releases the conversation; it runs once, after Run.
	Close() error
}

// HearsFromAnswer is implemented by a conversation that hears a placed
// call's callee from the answer on rather than from the opening (a bot's
// media stream: the callee's first words are the bot's to hear, as a
// Twilio stream carries them). The machine detector still listens, and
// Opened still comes.
type HearsFromAnswer interface {
	HearsFromAnswer() bool
}

// hearsFromAnswer reports whether conv hears a placed call's callee from
// the answer on.
func hearsFromAnswer(conv Conversation) bool {
	h, ok := conv.(HearsFromAnswer)
	return ok && h.HearsFromAnswer()
}

// LegFormat is the format of a conversation that takes whatever the
// caller's leg speaks (the line test): its G.711 passed through as it is,
// or PCM16 at the leg's rate. Nothing is resampled, encoded or decoded
// for it. The call resolves it once the leg is known, so Speaker.Format
// never returns it.
var LegFormat = media.Format{Encoding: "leg"}

// LegG711Or is the format of a conversation that takes a G.711 leg's code
// words as they are (passed through both ways: an echo agent), and PCM16
// at rate from a leg without G.711 (a wideband caller keeps its
// bandwidth). The call resolves it as it resolves LegFormat.
func LegG711Or(rate int) media.Format { return media.Format{Encoding: LegFormat.Encoding, Rate: rate} }

// legFormat resolves f, a LegFormat or LegG711Or, for a leg whose own
// audio is own: its G.711, else PCM16 at f's rate (the leg's own when 0).
func legFormat(own, f media.Format) media.Format {
	if own == media.FormatPCMU || own == media.FormatPCMA || f.Rate == 0 {
		return own
	}
	return media.PCM16(f.Rate)
}

// KeypadSettings are a conversation's keypad rules.
type KeypadSettings struct {
	// Policy is model (default), redact or route.
	Policy dtmf.Policy
	// Inband is the conversation's in-band detection ("" keeps the
	// appliance's); the number's own setting wins over it.
	Inband Inband
}

// Phone is what a conversation sees of its call: the roles below, given
// to the conversation once, by its Router. Each part of a conversation
// takes only the role it uses. *Call implements it.
type Phone interface {
	Facts
	Speaker
	Controls
	Record
	Parties
}

// Facts are what a call is: its ids, route, party and figures.
type Facts interface {
	// ID is the call id.
	ID() string
	// Route is where admission sent the call.
	Route() Route
	// Info describes the caller.
	Info() LegInfo
	// Logger is the call's logger (with call_id).
	Logger() zerolog.Logger
	// Context ends with the call.
	Context() context.Context
	// Snapshot is the call's current view.
	Snapshot() Snapshot
	// MediaHealth is how the call sounds so far.
	MediaHealth() MediaHealth
}

// Speaker is the conversation's voice on the call: what it says reaches
// whoever hears the conversation (the caller, unless the call routed
// them elsewhere: then it goes nowhere).
type Speaker interface {
	// Format is the conversation's audio format (LegFormat resolved).
	Format() media.Format
	// Play queues audio in Format (the model's audio), tagged with an
	// item id.
	Play(itemID string, b []byte)
	// PlayPCM queues PCM16 little-endian at Format().Rate (audio rendered
	// locally: greetings, prompts, tones), whatever the Format.
	PlayPCM(itemID string, pcm []byte)
	// Flush drops everything queued within one frame and reports which
	// item was playing and how many ms of it the caller heard (barge-in).
	Flush() (itemID string, playedMs int)
	// Pending is how much queued audio has not been sent yet.
	Pending() time.Duration
}

// Controls are what a conversation may do to its call.
type Controls interface {
	// Hangup ends the call with a BYE carrying reason (and headers: a
	// Reason among them replaces the appliance's), without waiting.
	Hangup(reason string, headers ...Header)
	// Transfer asks the caller's side to call target instead and waits for
	// the outcome; progress, when set, gets each status reported; headers
	// go with the REFER.
	Transfer(ctx context.Context, target string, progress func(status int), headers ...Header) error
	// SendDTMF plays digits to the caller's side and returns once sent.
	SendDTMF(ctx context.Context, digits string) error
}

// Parties are the call's parties and their routes, for a conversation
// that hands its caller on (a transfer, hold): who hears what, and whom
// the conversation hears (party.go).
type Parties interface {
	// Caller is the call's first party.
	Caller() *Party
	// Join adds a leg to the live call (it starts the leg's media; a
	// placed leg dials on its Answer).
	Join(leg Leg, inband Inband) (*Party, error)
	// Leave hangs up a party and takes it out of the call.
	Leave(p *Party, reason string) error
	// Hear sets what p hears from the next frame on.
	Hear(p *Party, s Source) error
	// ConversationHears sets whose voice the conversation hears (nil:
	// nobody).
	ConversationHears(p *Party) error
}

// Record is the call's record as a conversation adds to it.
type Record interface {
	// Note adds an entry to the call record.
	Note(n Note)
}

// Router picks the conversation of a call from its route. It may refuse
// the call with an error carrying a SIP status (see RejectError).
type Router interface {
	Conversation(ctx context.Context, p Phone) (Conversation, error)
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
	NoteMedia      = "media"
	// NoteProgress is a step of a placed call's dial or the machine
	// detection's verdict.
	NoteProgress = "progress"
	// NoteSupervisor is a supervisor listening to the call, taking it
	// over, or leaving it (Text), with who (the API key) in Data.
	NoteSupervisor = "supervisor"
	// NoteParty is another party (a transfer's human) leaving the call,
	// with its leg's media figures in Data.
	NoteParty = "party"
	// NoteHold is a party's phone putting the call on hold (Text "held")
	// or taking it off hold ("resumed"), with the party and its role
	// (caller or human) in Data.
	NoteHold = "hold"
)

// RejectError tells the Call which SIP status to refuse a call with.
type RejectError struct {
	Status int
	Reason string
	// RetryAfter, when set, asks the caller to try again then.
	RetryAfter time.Duration
	Err        error
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
// the call on purpose; Reason goes into the BYE's Reason header, Headers
// with the BYE (a Reason among them replaces it).
type HangupError struct {
	Reason  string
	Headers []Header
}

func (e *HangupError) Error() string { return "hang up: " + e.Reason }

// Is makes errors.Is(err, ErrHangup) true.
func (e *HangupError) Is(target error) bool { return target == ErrHangup }

// Hangup returns the error a conversation ends the call with; headers go
// with the BYE.
func Hangup(reason string, headers ...Header) error {
	return &HangupError{Reason: reason, Headers: headers}
}

// Errors of the call's controls.
var (
	// ErrNotActive means the call is not answered, or already over.
	ErrNotActive = errors.New("call is not active")
	// ErrNotSupported means the leg cannot do what was asked.
	ErrNotSupported = errors.New("not supported by this leg")
	// ErrConversationEnded means the call's conversation has ended while
	// the call goes on (Call.EndConversation); it is also the cause of
	// the context the conversation's Run then sees end.
	ErrConversationEnded = errors.New("the conversation has ended")
)
