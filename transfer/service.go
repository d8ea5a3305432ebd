package transfer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/media"
)

// Call is what a transfer uses of its call (a call.Phone is one): its
// facts, its record, the REFER of the caller's side, and its parties.
type Call interface {
	ID() string
	Info() call.LegInfo
	Route() call.Route
	Logger() zerolog.Logger
	Context() context.Context
	Note(n call.Note)
	Transfer(ctx context.Context, target string, progress func(status int), headers ...call.Header) error
	call.Parties
}

// Dialer places the human's leg of a transfer (app: the SIP server's
// Place, a SIP leg of the call handler, the number's outbound trunk).
type Dialer interface {
	// Resolve checks that a call on route may call target and says how:
	// a tel: target through the number's outbound trunk (with its digest
	// credentials), a sip: target directly, if its address is allowed.
	// Its refusals are 400s naming target_uri (*httpx.Error).
	Resolve(ctx context.Context, route call.Route, target string) (Target, error)
	// Dial prepares a call to t; its INVITE goes out with the leg's
	// Answer, once the leg joined the call.
	Dial(ctx context.Context, t Target, o DialOptions) (Leg, error)
}

// Target is a resolved target. It may hold a trunk's password: never
// log it.
type Target struct {
	// URI is the Request-URI of the human's INVITE.
	URI string
	// From is the INVITE's caller id (a user part).
	From string
	// AuthUsername and AuthPassword answer the trunk's challenge.
	AuthUsername, AuthPassword string
	// Route is the call's route, carried with the human's leg.
	Route call.Route
	// SRTP is the number's SRTP policy ("": the appliance's).
	SRTP string
}

// DialOptions shape the human's INVITE.
type DialOptions struct {
	// RingTimeout cancels the INVITE when nobody answered within it.
	RingTimeout time.Duration
	// Codecs are offered in this order (PCMU, PCMA): the caller's law
	// first, so the bridge relays code words.
	Codecs []string
	// Headers are added to the INVITE.
	Headers []call.Header
}

// Leg is the human's leg: a call.Leg whose dialog a REFER with Replaces
// can name.
type Leg interface {
	call.Leg
	// Replaces is the value of a Replaces header naming the leg's dialog
	// (RFC 3891), once it is confirmed.
	Replaces() string
}

// Voice renders text to PCM16LE at rate (the speech engine).
type Voice interface {
	Render(ctx context.Context, text, voice string, rate int) ([]byte, error)
}

// Defaults of Options.
const (
	DefaultRingTimeout        = 30 * time.Second
	DefaultAcceptTimeout      = 20 * time.Second
	DefaultReferNotifyTimeout = 4 * time.Second
)

// Options configure a Service; Dialer is required.
type Options struct {
	Dialer Dialer
	// Voice speaks briefings and hold prompts (optional: without it, or
	// when it fails, the human hears a short chime instead of the
	// briefing, and a prompt is refused).
	Voice Voice
	// AudioDir is where hold_audio WAV files are read from.
	AudioDir string
	// HoldAudio is the default hold audio (default music).
	HoldAudio string
	// RingTimeout is the default of timeout_s (default 30 s).
	RingTimeout time.Duration
	// AcceptTimeout is how long the human of a warm transfer has to
	// accept once the briefing ended (default 20 s).
	AcceptTimeout time.Duration
	// ReferNotifyTimeout is how long mode auto waits for the first NOTIFY
	// of an accepted REFER before it bridges instead (default 4 s).
	ReferNotifyTimeout time.Duration
}

// Service starts transfers and makes hold audio.
type Service struct {
	opts  Options
	music *media.Loop
}

// NewService returns the service.
func NewService(opts Options) (*Service, error) {
	if opts.Dialer == nil {
		return nil, errors.New("transfer: a dialer is required")
	}
	if opts.HoldAudio == "" {
		opts.HoldAudio = HoldMusic
	}
	if err := checkHoldAudio(opts.HoldAudio); err != nil {
		return nil, fmt.Errorf("transfer: default hold audio: %w", err)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.RingTimeout, DefaultRingTimeout)
	def(&opts.AcceptTimeout, DefaultAcceptTimeout)
	def(&opts.ReferNotifyTimeout, DefaultReferNotifyTimeout)
	music, err := media.NewLoop(Music(musicRate), musicRate)
	if err != nil {
		return nil, fmt.Errorf("transfer: hold music: %w", err)
	}
	return &Service{opts: opts, music: music}, nil
}

// Prepare checks a transfer of c before it starts (the API answers 400
// for what it refuses) and returns it: the request's form (Check), the
// target (Dialer.Resolve, unless only the caller's side calls it), the
// caller's leg for a REFER, the hold audio's file.
func (s *Service) Prepare(ctx context.Context, c Call, r Request) (*Transfer, error) {
	if err := Check("", &r); err != nil {
		return nil, err
	}
	if r.Mode == ModeRefer && c.Info().Kind != "sip" {
		return nil, httpx.BadRequest("mode", "a %s call cannot be referred: use mode bridge or warm", c.Info().Kind)
	}
	if r.Timeout == 0 {
		r.Timeout = s.opts.RingTimeout
	}
	if r.HoldAudio == "" {
		r.HoldAudio = s.opts.HoldAudio
	}
	if isWAV(r.HoldAudio) {
		if _, err := s.wavLoop(r.HoldAudio); err != nil {
			return nil, httpx.BadRequest("hold_audio", "%v", err)
		}
	} else if r.HoldAudio != HoldMusic && r.HoldAudio != HoldSilence && s.opts.Voice == nil {
		return nil, httpx.BadRequest("hold_audio", "this appliance has no speech engine to speak a hold prompt: use music, silence or a WAV file")
	}
	t := &Transfer{s: s, c: c, req: r, id: newID(), log: c.Logger()}
	if r.Mode != ModeRefer || r.Replaces {
		target, err := s.opts.Dialer.Resolve(ctx, c.Route(), r.TargetURI)
		if err != nil {
			return nil, err
		}
		t.target = target
	}
	t.log = t.log.With().Str("transfer_id", t.id).Str("mode", string(r.Mode)).Logger()
	return t, nil
}

// newID is a transfer id: tr_ and 16 hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "tr_" + hex.EncodeToString(b[:])
}
