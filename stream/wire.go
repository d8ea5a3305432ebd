package stream

import (
	"fmt"
	"sync"

	"switchboard/media"
)

// wire is one protocol's connection to the bot. write runs on the
// stream's writer goroutine only, read on its reader goroutine only;
// close may run from any goroutine, once the writer is done.
type wire interface {
	// format is the audio the protocol carries.
	format() media.Format
	// hello writes the messages that open the stream (connected and start;
	// AudioSocket's id).
	hello() error
	// write sends one message to the bot.
	write(m *outMsg) error
	// read returns the bot's next message. A message the stream refuses
	// is a *refusal (the stream goes on); any other error ends it.
	read() (inMsg, error)
	// close ends the connection with reason (the WebSocket close frame).
	close(reason string) error
}

// outKind is the kind of a message to the bot.
type outKind uint8

const (
	outMedia outKind = iota
	outDTMF
	outMark
	outStop
)

// Tracks of media messages (the Twilio names).
const (
	trackInbound  = "inbound"
	trackOutbound = "outbound"
)

// outMsg is one message to the bot, queued for the writer goroutine.
type outMsg struct {
	kind outKind
	// track is the media's track; at is its time since the stream
	// started, in ms; buf its payload in the protocol's audio (pooled:
	// the writer returns it).
	track string
	at    int64
	buf   *[]byte
	name  string // a mark's name
	digit byte
}

// inKind is the kind of a message from the bot.
type inKind uint8

const (
	inMedia inKind = iota
	inMark
	inClear
	inHangup
)

// inMsg is one message from the bot. payload (the audio, in the
// protocol's format) is valid until the next read.
type inMsg struct {
	kind    inKind
	payload []byte
	name    string
}

// Reasons a message from the bot is refused (the metric's reason label).
const (
	refusedInvalidJSON   = "invalid_json"
	refusedUnknownEvent  = "unknown_event"
	refusedNoPayload     = "missing_payload"
	refusedBadBase64     = "bad_base64"
	refusedAudioSize     = "bad_audio_size"
	refusedStreamSid     = "wrong_stream_sid"
	refusedNoMarkName    = "missing_mark_name"
	refusedBinary        = "binary_frame"
	refusedTooManyMarks  = "too_many_marks"
	refusedUnknownKind   = "unknown_kind"
	refusedMarkUnsupport = "mark_unsupported"
)

// refusal is a message from the bot the stream ignores (counted, noted
// once per reason) without ending the stream.
type refusal struct {
	reason string
	detail string
}

func (r *refusal) Error() string { return fmt.Sprintf("message refused (%s): %s", r.reason, r.detail) }

func refuse(reason, format string, args ...any) *refusal {
	return &refusal{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// frames pools the payloads of queued media messages.
var frames = sync.Pool{New: func() any { b := make([]byte, 0, 320); return &b }}

func getFrame(b []byte) *[]byte {
	p := frames.Get().(*[]byte)
	*p = append((*p)[:0], b...)
	return p
}

func putFrame(p *[]byte) {
	if p != nil && cap(*p) <= 4096 {
		frames.Put(p)
	}
}
