package realtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"switchboard/realtime/internal/sendq"
)

// ErrPongTimeout is wrapped (with ErrDisconnected) by Err when the peer sent
// nothing, not even a pong, within PingInterval+PongTimeout.
var ErrPongTimeout = errors.New("no pong from peer")

// freeBufs holds written messages' buffers for the next appends of any
// session: shared, so a session keeps none between its frames (each would
// keep a few: 5 KB a call), and bounded, so a burst does not stay.
var freeBufs = make(chan []byte, 512)

// wsSession is a Session over a client WebSocket: one reader goroutine, one
// writer goroutine (which also sends pings).
type wsSession struct {
	conn   *websocket.Conn
	opts   Options
	log    zerolog.Logger
	q      *sendq.Queue[[]byte]
	events chan Event

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	once   sync.Once

	audioSent, eventsSent, eventsRecv atomic.Uint64

	// rbuf is the reader's buffer for audio deltas (the writer's come
	// from freeBufs): the per-frame traffic reuses its memory instead of
	// making garbage at 50 frames a second.
	rbuf []byte
	// dec decodes what readLoop reads, audio deltas from a pool
	// (decoder.go); one holds settle's answer for the common case.
	dec deltaDecoder
	one [1]Event

	// configuring is true from Open's session.update until its answer:
	// the provider's session.created (its defaults) is held meanwhile and
	// delivered with the session in force, so that session.created always
	// reports the effective session. Owned by readLoop.
	configuring bool
	created     *SessionCreated
	held        []Event
}

var _ Session = (*wsSession)(nil)

func newWSSession(conn *websocket.Conn, opts Options, configuring bool) *wsSession {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &wsSession{
		conn:   conn,
		opts:   opts,
		log:    opts.Logger.With().Str("realtime_raddr", conn.RemoteAddr().String()).Logger(),
		q:      sendq.New[[]byte](opts.AudioQueue, opts.ControlQueue),
		events: make(chan Event, opts.EventBuffer),
		ctx:    ctx,
		cancel: cancel,

		configuring: configuring,
	}
	deadline := func() time.Time { return time.Now().Add(opts.PingInterval + opts.PongTimeout) }
	_ = conn.SetReadDeadline(deadline())
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(deadline()) })
	s.wg.Add(2)
	go s.readLoop(deadline)
	go s.writeLoop()
	return s
}

// fail ends the session with cause (the first cause wins) and unblocks both
// goroutines.
func (s *wsSession) fail(cause error) {
	s.cancel(cause)
	s.q.Close()
	_ = s.conn.Close()
}

func (s *wsSession) readLoop(deadline func() time.Time) {
	defer s.wg.Done()
	defer close(s.events)
	for {
		msg, err := s.read()
		if err != nil {
			s.fail(classifyReadError(err))
			return
		}
		_ = s.conn.SetReadDeadline(deadline())
		e, err := s.dec.decode(msg)
		if err != nil {
			s.log.Warn().Err(err).Int("bytes", len(msg)).Msg("realtime: undecodable server message dropped")
			continue
		}
		for _, e := range s.settle(e) {
			select {
			case s.events <- e:
				s.eventsRecv.Add(1)
			case <-s.ctx.Done():
				return
			}
		}
		s.one[0] = nil
	}
}

// deltaPrefix starts an audio delta as providers write it: the reader's
// buffer is reused for those (their decoding copies what it keeps); any
// other message is decoded from a copy, as an unknown event keeps its bytes.
var deltaPrefix = []byte(`{"type":"` + TypeResponseOutputAudioDelta + `"`)

// read returns the next message.
func (s *wsSession) read() ([]byte, error) {
	_, r, err := s.conn.NextReader()
	if err != nil {
		return nil, err
	}
	b := s.rbuf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if cap(b) <= 64<<10 { // an outsized message is not kept around
		s.rbuf = b
	}
	if !bytes.HasPrefix(b, deltaPrefix) {
		return bytes.Clone(b), nil
	}
	return b, nil
}

// settle returns the events to deliver for e: while the session is being
// configured, the provider's session.created and what follows it are held
// until the session.updated that answers the configuration, which is
// delivered as the session.created (its session, the created event's id).
// An error first means the configuration was refused: the held events go
// out as they came, then the error.
func (s *wsSession) settle(e Event) []Event {
	if !s.configuring {
		s.one[0] = e
		return s.one[:]
	}
	switch v := e.(type) {
	case *SessionCreated:
		if s.created == nil {
			s.created = v
			return nil
		}
	case *SessionUpdated:
		if s.created != nil {
			s.configuring = false
			c := &SessionCreated{Header: s.created.Header, Session: v.Session}
			out := append([]Event{c}, s.held...)
			s.created, s.held = nil, nil
			return out
		}
	case *ErrorEvent:
		s.configuring = false
		var out []Event
		if s.created != nil {
			out = append(out, s.created)
		}
		out = append(append(out, s.held...), e)
		s.created, s.held = nil, nil
		return out
	}
	if s.created == nil {
		s.one[0] = e
		return s.one[:]
	}
	if len(s.held) >= s.opts.EventBuffer { // a provider that never answers the update
		s.configuring = false
		out := append([]Event{s.created}, s.held...)
		s.created, s.held = nil, nil
		return append(out, e)
	}
	s.held = append(s.held, e)
	return nil
}

func classifyReadError(err error) error {
	var ce *websocket.CloseError
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("%w: peer closed: %w", ErrDisconnected, err)
	case errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Errorf("%w: %w", ErrDisconnected, ErrPongTimeout)
	}
	return fmt.Errorf("%w: %w", ErrDisconnected, err)
}

func (s *wsSession) writeLoop() {
	defer s.wg.Done()
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	var batch [][]byte
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-ping.C:
			if err := s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.opts.WriteTimeout)); err != nil {
				s.fail(fmt.Errorf("%w: ping: %w", ErrDisconnected, err))
				return
			}
		case <-s.q.Ready():
			batch = s.q.Drain(batch[:0])
			for i, b := range batch {
				_ = s.conn.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
				if err := s.conn.WriteMessage(websocket.TextMessage, b); err != nil {
					s.fail(fmt.Errorf("%w: write: %w", ErrDisconnected, err))
					return
				}
				batch[i] = nil
				select { // written: its buffer serves a later append
				case freeBufs <- b[:0]:
				default:
				}
			}
		}
	}
}

func (s *wsSession) Send(ctx context.Context, e Event) error {
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	if u, ok := e.(*SessionUpdate); ok {
		// The provider takes the voice and the turn detection in one
		// placement (Options.SessionShape).
		shaped := *u
		shaped.Session = u.Session.Shaped(s.opts.SessionShape)
		e = &shaped
	}
	b, err := Encode(e)
	if err != nil {
		return err
	}
	if err := s.q.Push(ctx, b); err != nil {
		if errors.Is(err, sendq.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	s.eventsSent.Add(1)
	return nil
}

func (s *wsSession) AppendAudio(audio []byte) error {
	if s.ctx.Err() != nil {
		s.q.PushAudio(nil) // counted as dropped
		return ErrClosed
	}
	var buf []byte
	select {
	case buf = <-freeBufs:
	default:
		buf = make([]byte, 0, 64+len(audio)*4/3)
	}
	s.q.PushAudio(AppendAudioEvent(buf, "", audio))
	s.audioSent.Add(1)
	return nil
}

func (s *wsSession) Events() <-chan Event  { return s.events }
func (s *wsSession) Done() <-chan struct{} { return s.ctx.Done() }
func (s *wsSession) Err() error            { return context.Cause(s.ctx) }
func (s *wsSession) Stats() Stats {
	return Stats{
		AudioSent:      s.audioSent.Load(),
		AudioDropped:   s.q.Dropped(),
		EventsSent:     s.eventsSent.Load(),
		EventsReceived: s.eventsRecv.Load(),
	}
}

// Close sends a normal close frame (best effort), closes the connection and
// waits for the reader and writer.
func (s *wsSession) Close() error {
	s.once.Do(func() {
		if s.ctx.Err() == nil {
			_ = s.conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		}
		s.fail(ErrClosed)
		s.wg.Wait()
	})
	return nil
}
