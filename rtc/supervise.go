package rtc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
)

// Supervised is a live call a supervisor's browser joins (*call.Call).
type Supervised interface {
	ID() string
	Supervise(leg call.Leg, s call.Supervision) (*call.Party, error)
	ReserveTakeOver() (release func(), err error)
}

var _ Supervised = (*call.Call)(nil)

// Supervise brings a supervisor's browser into the live call c: it
// negotiates offer (Opus, else PCMU, as for a browser call; a browser
// that only listens may offer to receive only) and returns the SDP answer
// at once. Once ICE and DTLS are up the leg joins the call
// (c.Supervise: listen, or take over) and the call owns it from then on:
// it ends with the call, or takes the supervisor out when the browser
// goes away. A browser that never connects, or a call that can no longer
// be joined by then, has its connection closed. The leg's id names the
// supervisor's party in the call record. A takeover holds the call's
// takeover from the offer on (call.ReserveTakeOver): a second one is
// refused at once (call.ErrTakingOver) until this one joined or failed.
func (s *Server) Supervise(ctx context.Context, c Supervised, offer string, sup call.Supervision, log zerolog.Logger) (Answer, error) {
	codec, err := chooseCodec(offer)
	if err != nil {
		s.opts.Metrics.offer(offerBad)
		return Answer{}, err
	}
	release := func() {}
	if sup.TakeOver {
		if release, err = c.ReserveTakeOver(); err != nil {
			return Answer{}, err
		}
	}
	joining := false
	defer func() {
		if !joining {
			release()
		}
	}()
	info := call.LegInfo{Kind: "webrtc", From: "api_key:" + sup.KeyID, To: c.ID(), Received: time.Now()}
	l, err := newLeg(s, codec, offer, info, CallOptions{}, log.With().Str("supervised_call_id", c.ID()).Logger())
	if err != nil {
		if errors.Is(err, ErrBadOffer) {
			s.opts.Metrics.offer(offerBad)
		}
		return Answer{}, err
	}
	l.joined = true
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = l.Close()
		return Answer{}, ErrClosed
	}
	s.legs[l.id] = l
	s.wg.Add(1)
	s.mu.Unlock()
	joining = true
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.legs, l.id)
			s.mu.Unlock()
		}()
		s.join(l, c, sup, release)
	}()
	select {
	case r := <-l.result:
		return Answer{CallID: l.id, SDP: r.sdp}, nil
	case <-ctx.Done():
		l.cancel(errors.New("the browser's request ended before the answer"))
		return Answer{}, ctx.Err()
	}
}

// join hands the answer to Supervise, waits for the browser to connect
// and joins its leg to the call (then lets the takeover's reservation go);
// it returns when the leg ends.
func (s *Server) join(l *Leg, c Supervised, sup call.Supervision, release func()) {
	if err := l.Answer(l.ctx); err != nil {
		release()
		l.log.Info().Err(err).Msg("supervisor's browser did not connect")
		_ = l.Close()
		return
	}
	_, err := c.Supervise(l, sup)
	release()
	if err != nil {
		l.log.Info().Err(err).Msg("supervisor not joined")
		l.cancel(fmt.Errorf("not joined: %w", err))
		_ = l.Close()
		return
	}
	<-l.ctx.Done()
}
