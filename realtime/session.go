package realtime

import (
	"context"
	"errors"
)

// Session is one realtime conversation with a model, as the call object sees
// it. Implementations: the upstream WebSocket client (Upstream.Open), the
// offline echo engine (package echo).
//
// Events yields every server event in order, starting with session.created
// and conversation.created; it is closed once the session has ended, after
// which Err says why. AppendAudio is the hot path: it never blocks (when the
// session falls behind, the oldest queued audio is dropped and counted in
// Stats). Send queues any other client event in order with the audio, waiting
// for room if the control queue is full. A receiver of Events may hand an
// event back with Release once done with it, so that the memory of audio
// deltas is reused (the upstream client's are pooled).
type Session interface {
	// Send queues a client event. It fails with ErrClosed once the session
	// has ended.
	Send(ctx context.Context, e Event) error
	// AppendAudio queues audio in the session's input format as an
	// input_audio_buffer.append; it copies audio and never blocks.
	AppendAudio(audio []byte) error
	// Events returns the server events channel.
	Events() <-chan Event
	// Done is closed when the session has ended.
	Done() <-chan struct{}
	// Err returns why the session ended (nil while it runs): ErrClosed after
	// Close, an error wrapping ErrDisconnected when the peer went away.
	Err() error
	// Stats returns counters of the session so far.
	Stats() Stats
	// Close ends the session and waits for its goroutines; it is
	// idempotent.
	Close() error
}

// Engine opens sessions with a model. cfg is applied with a session.update
// right after the session opens (a zero cfg sends none).
type Engine interface {
	Open(ctx context.Context, cfg SessionConfig) (Session, error)
}

// Stats are a session's counters.
type Stats struct {
	// AudioSent counts input_audio_buffer.append events handed on.
	AudioSent uint64
	// AudioDropped counts audio frames dropped because the session was
	// behind (or already closed).
	AudioDropped uint64
	// EventsSent counts other client events handed on.
	EventsSent uint64
	// EventsReceived counts server events delivered on Events.
	EventsReceived uint64
}

var (
	// ErrClosed is returned by Send and AppendAudio once the session has
	// ended, and by Err after Close.
	ErrClosed = errors.New("realtime: session closed")
	// ErrDisconnected is wrapped by Err when the peer closed the
	// connection, stopped answering pings, or the connection failed.
	ErrDisconnected = errors.New("realtime: disconnected")
)

// IsZero reports whether cfg has no member set.
func (s *SessionConfig) IsZero() bool {
	b, err := s.MarshalJSON()
	return err == nil && string(b) == "{}"
}
