package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/media/wav"
	"switchboard/sip"
)

func init() {
	register("dial", "place a test call and print its timeline (dial sip:NUMBER@HOST[:PORT] [flags])", dialCmd)
}

// Defaults of `switchboard dial`.
const (
	defaultDialDuration  = 10 * time.Second
	defaultDialTimeout   = 30 * time.Second
	defaultDTMFDelay     = time.Second
	defaultDialRTPPorts  = "30000-30999"
	dialUserAgent        = "switchboard-dial"
	dialHangupTimeout    = 5 * time.Second
	firstRTPPollInterval = 2 * time.Millisecond
	// noRTPGrace: a call that lasted this long after the answer without a
	// single inbound RTP packet is reported as failed (one-way audio, the
	// usual NAT or firewall problem).
	noRTPGrace = 2 * time.Second
)

// dialOptions are the parsed flags of `switchboard dial`.
type dialOptions struct {
	target    dialTarget
	transport string
	play      string
	record    string
	digits    string
	dtmfMode  string
	dtmfDelay time.Duration
	duration  time.Duration
	timeout   time.Duration
	codecs    []sip.Codec
	user      string
	password  string
	from      string
	bind      netip.Addr
	rtpLo     int
	rtpHi     int
	headers   []sip.Header
	json      bool
	verbose   bool
}

const dialUsage = `usage: switchboard dial sip:NUMBER@HOST[:PORT][;transport=tcp] [flags]

Places one test call with the appliance's own SIP and RTP stack, prints a
timeline (INVITE, provisional responses, answer, first RTP, DTMF, BYE) and
RTP statistics. Exit status 0 when the call was answered and ended normally,
1 when it failed (final error response, no answer, no RTP received).

flags:
`

func parseDialOptions(env *cliEnv, args []string) (*dialOptions, error) {
	fs, asJSON := newFlags(env, "dial")
	fs.Lookup("json").Usage = "print the timeline and statistics as one JSON document"
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), dialUsage)
		fs.PrintDefaults()
	}
	play := fs.String("play", "", "WAV file (16-bit PCM, 8/16/24/48 kHz, mono or stereo) to send after the answer, then silence")
	record := fs.String("record", "", "write the received audio to this WAV file (8 kHz 16-bit mono)")
	digits := fs.String("dtmf", "", "DTMF digits to send after the answer (0-9 * # A-D)")
	dtmfMode := fs.String("dtmf-mode", "auto", "how to send --dtmf: rfc4733, info (SIP INFO application/dtmf-relay) or auto (rfc4733 when the answer has telephone-event)")
	dtmfDelay := fs.Duration("dtmf-delay", defaultDTMFDelay, "wait this long after the answer before sending --dtmf")
	duration := fs.Duration("duration", defaultDialDuration, "hang up this long after the answer")
	timeout := fs.Duration("timeout", defaultDialTimeout, "give up (CANCEL) when not answered within this time")
	codec := fs.String("codec", "", "offer only this codec: pcmu or pcma (default both, PCMU first)")
	user := fs.String("user", "", "digest user name for 401/407 challenges")
	password := fs.String("password", "", "digest password (or SWITCHBOARD_SIP_PASSWORD)")
	from := fs.String("from", "", "caller id: the From user part (default switchboard)")
	transport := fs.String("transport", "", "udp or tcp (default: the target's ;transport parameter, else udp)")
	bind := fs.String("bind", "", "local IP for SIP and RTP (default: the address used to reach the target)")
	rtpPorts := fs.String("rtp-ports", defaultDialRTPPorts, "local RTP port range MIN-MAX")
	var headers stringList
	fs.Var(&headers, "header", `extra INVITE header "Name: value", repeatable`)
	verbose := fs.Bool("verbose", false, "log SIP and media details to stderr")

	var positional []string
	rest := args
	for { // flags may come before and after the target
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fs.Usage()
		return nil, errors.New("want exactly one target, e.g. sip:+14155550100@pbx.example.com:5060")
	}
	t, err := parseDialTarget(positional[0])
	if err != nil {
		return nil, err
	}
	o := &dialOptions{
		target: t, play: *play, record: *record, digits: *digits, dtmfMode: strings.ToLower(*dtmfMode),
		dtmfDelay: *dtmfDelay, duration: *duration, timeout: *timeout, user: *user, password: *password,
		from: *from, json: *asJSON, verbose: *verbose,
	}
	switch tr := strings.ToLower(*transport); {
	case tr == "":
		o.transport = t.Transport
		if o.transport == "" {
			o.transport = "udp"
		}
	case tr != "udp" && tr != "tcp":
		return nil, fmt.Errorf("--transport %q: want udp or tcp", *transport)
	case t.Transport != "" && t.Transport != tr:
		return nil, fmt.Errorf("--transport %s contradicts the target's ;transport=%s", tr, t.Transport)
	default:
		o.transport = tr
	}
	switch strings.ToLower(*codec) {
	case "":
		o.codecs = []sip.Codec{sip.PCMU, sip.PCMA}
	case "pcmu", "ulaw", "g711u":
		o.codecs = []sip.Codec{sip.PCMU}
	case "pcma", "alaw", "g711a":
		o.codecs = []sip.Codec{sip.PCMA}
	default:
		return nil, fmt.Errorf("--codec %q: want pcmu or pcma", *codec)
	}
	switch o.dtmfMode {
	case "auto", "rfc4733", "info":
	default:
		return nil, fmt.Errorf("--dtmf-mode %q: want auto, rfc4733 or info", *dtmfMode)
	}
	if o.digits != "" && len(o.digits) > dtmf.MaxSendDigits {
		return nil, fmt.Errorf("--dtmf %q: at most %d keys", o.digits, dtmf.MaxSendDigits)
	}
	for i := range len(o.digits) {
		if !dtmf.ValidDigit(o.digits[i]) {
			return nil, fmt.Errorf("--dtmf %q: %q is not a DTMF key (0-9 * # A-D)", o.digits, o.digits[i])
		}
	}
	if o.duration <= 0 || o.timeout <= 0 || o.dtmfDelay < 0 {
		return nil, errors.New("--duration and --timeout must be positive, --dtmf-delay not negative")
	}
	if o.password == "" {
		o.password = env.getenv("SWITCHBOARD_SIP_PASSWORD")
	}
	if o.user == "" && o.password != "" {
		return nil, errors.New("--password without --user")
	}
	if *bind != "" {
		if o.bind, err = netip.ParseAddr(*bind); err != nil {
			return nil, fmt.Errorf("--bind %q: %w", *bind, err)
		}
		o.bind = o.bind.Unmap()
		if o.bind.IsUnspecified() {
			return nil, fmt.Errorf("--bind %s: want the address to put in SDP and Contact, not a wildcard", *bind)
		}
	}
	if o.rtpLo, o.rtpHi, err = parsePortRange(*rtpPorts); err != nil {
		return nil, fmt.Errorf("--rtp-ports: %w", err)
	}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \r\n") || strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf(`--header %q: want "Name: value"`, h)
		}
		o.headers = append(o.headers, sip.Header{Name: name, Value: value})
	}
	return o, nil
}

func dialCmd(env *cliEnv, args []string) error {
	o, err := parseDialOptions(env, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runDial(ctx, stop, env, o)
}

// dialResult is the --json document.
type dialResult struct {
	Target    string               `json:"target"`
	Transport string               `json:"transport"`
	CallID    string               `json:"sip_call_id,omitempty"`
	Result    string               `json:"result"` // "ok" or "failed"
	Error     string               `json:"error,omitempty"`
	Status    int                  `json:"status,omitempty"`
	Reason    string               `json:"reason,omitempty"`
	Media     *dialMedia           `json:"media,omitempty"`
	Ended     string               `json:"ended,omitempty"` // local_hangup, remote_bye, interrupted
	Duration  float64              `json:"duration_s,omitempty"`
	DTMFSent  string               `json:"dtmf_sent,omitempty"`
	Recorded  float64              `json:"recorded_s,omitempty"`
	RTP       *media.StatsSnapshot `json:"rtp,omitempty"`
	Events    []dialEvent          `json:"events"`
}

// dialMedia is the answered media in the --json document.
type dialMedia struct {
	Codec          string `json:"codec"`
	ClockRate      uint32 `json:"clock_rate"`
	PtimeMs        int64  `json:"ptime_ms"`
	TelephoneEvent uint8  `json:"telephone_event,omitempty"`
	Remote         string `json:"remote"`
	Direction      string `json:"direction,omitempty"`
	LocalRTP       string `json:"local_rtp"`
}

// callFailedError is a call that did not go through; exit status 1.
type callFailedError struct{ msg string }

func (e *callFailedError) Error() string { return "call failed: " + e.msg }

// ExitCode implements exitCoder.
func (e *callFailedError) ExitCode() int { return 1 }

// runDial places the call. stop ends signal handling, so a second Ctrl-C
// kills the process the usual way.
func runDial(ctx context.Context, stop func(), env *cliEnv, o *dialOptions) (err error) {
	// The SIP stack logs a few things through log/slog's default logger;
	// this process is the boundary that decides where they go.
	log := zerolog.Nop()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	if o.verbose {
		log = zerolog.New(zerolog.ConsoleWriter{Out: env.stderr, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger().Level(zerolog.TraceLevel)
		slog.SetDefault(slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	var out io.Writer = env.stdout
	if o.json {
		out = nil
	}
	tl := newTimeline(out)
	res := &dialResult{Target: o.target.URI(), Transport: o.transport}
	defer func() {
		res.Events = tl.snapshot()
		if err != nil {
			res.Result, res.Error = "failed", err.Error()
		} else {
			res.Result = "ok"
		}
		if o.json {
			if perr := env.printJSON(res); perr != nil && err == nil {
				err = perr
			}
		}
	}()

	var playPCM []int16
	if o.play != "" {
		if playPCM, err = loadPhoneAudio(o.play); err != nil {
			return err
		}
	}
	ip := o.bind
	if !ip.IsValid() {
		if ip, err = localIPToward(o.target.HostPort()); err != nil {
			return err
		}
	}
	pool, err := media.NewPortPool(ip, o.rtpLo, o.rtpHi)
	if err != nil {
		return err
	}
	pair, err := pool.Allocate()
	if err != nil {
		return fmt.Errorf("rtp port on %s: %w", ip, err)
	}
	defer pool.Close()
	pairOwned := false
	defer func() {
		if !pairOwned {
			_ = pair.Close()
		}
	}()
	var rec *recorder
	if o.record != "" {
		if rec, err = newRecorder(o.record); err != nil {
			return err
		}
		defer func() {
			if cerr := rec.Close(); cerr != nil && err == nil {
				err = cerr
			}
			res.Recorded = rec.Duration().Seconds()
			if rec.Duration() > 0 {
				tl.printf("recorded %.2fs of received audio to %s", rec.Duration().Seconds(), o.record)
			}
		}()
	}
	d, err := sip.NewSoftphone(sip.SoftphoneOptions{LocalAddr: net.JoinHostPort(ip.String(), "0"), UserAgent: dialUserAgent}, log)
	if err != nil {
		return err
	}
	defer d.Close()

	rtpAddr := netip.AddrPortFrom(ip, uint16(pair.Port()))
	errNoAnswer := fmt.Errorf("no answer within %v", o.timeout)
	dialCtx, cancelDial := context.WithTimeoutCause(ctx, o.timeout, errNoAnswer)
	call, err := d.Dial(dialCtx, sip.DialRequest{
		Target: o.target.URI(), Transport: o.transport, To: o.target.User, From: o.from,
		User: o.user, Password: o.password, RTPAddr: rtpAddr, Codecs: o.codecs,
		Headers: o.headers, OnEvent: tl.onSIP,
	})
	cancelDial()
	if err != nil {
		tl.release("")
		var se *sip.StatusError
		msg := err.Error()
		switch {
		case errors.As(err, &se):
			res.Status, res.Reason = se.Status, se.Reason
			msg = fmt.Sprintf("%d %s", se.Status, se.Reason)
		case ctx.Err() != nil:
			msg = "interrupted before the answer"
		case errors.Is(context.Cause(dialCtx), errNoAnswer):
			msg = errNoAnswer.Error()
		}
		tl.add(time.Now(), "failed", res.Status, res.Reason, "call failed: "+msg)
		return &callFailedError{msg: msg}
	}
	answeredAt := time.Now()
	res.CallID = call.SIPCallID()
	m := call.Media()
	tl.release(describeMedia(m))
	res.Media = &dialMedia{Codec: m.Codec.Name, ClockRate: m.Codec.ClockRate, PtimeMs: m.Ptime.Milliseconds(),
		TelephoneEvent: m.DTMFPayloadType, Remote: m.RemoteAddr.String(), Direction: string(m.Direction), LocalRTP: rtpAddr.String()}

	// hangup sends BYE unless the far end's BYE came first.
	hangup := func(reason string) error {
		hctx, cancel := context.WithTimeout(context.Background(), dialHangupTimeout)
		defer cancel()
		herr := call.Hangup(hctx, reason)
		switch {
		case errors.Is(context.Cause(call.Context()), sip.ErrRemoteBye):
			res.Ended = "remote_bye"
			return nil
		case herr != nil:
			tl.add(time.Now(), "warning", 0, "", "BYE failed: "+herr.Error())
			return herr
		}
		tl.add(time.Now(), "bye_answered", 200, "OK", "200 OK (BYE)")
		return nil
	}
	codec, err := media.CodecByName(m.Codec.Name)
	if err != nil {
		_ = hangup("unsupported codec")
		return err
	}
	codec.PayloadType = m.Codec.PayloadType
	sopts := media.SessionOptions{Codec: codec, Ptime: m.Ptime, EventPayloadType: m.DTMFPayloadType, Remote: m.RemoteAddr, Logger: log}
	sess, err := media.NewSession(pair, sopts)
	if err != nil {
		_ = hangup("media setup failed")
		return err
	}
	pairOwned = true
	defer sess.Close()
	if rec != nil {
		rec.start = time.Now()
		if _, err := sess.ListenPCM(media.ClockRate, rec.onAudio); err != nil {
			_ = hangup("media setup failed")
			return err
		}
	}
	if !m.CanSend() {
		sess.Hold()
		tl.add(time.Now(), "warning", 0, "", "the answer does not let us send ("+string(m.Direction)+"); sending no RTP")
	}
	if len(playPCM) > 0 {
		sess.Playout().Write("play", playPCM)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	firstRTP := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(firstRTPPollInterval)
		defer t.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-t.C:
			}
			if st := sess.Stats(); st.PacketsIn > 0 {
				tl.add(time.Now(), "first_rtp_in", 0, "", fmt.Sprintf("first RTP in from %s (%d-byte packet)", sess.Remote(), st.BytesIn/st.PacketsIn))
				close(firstRTP)
				return
			}
		}
	}()

	var (
		dtmfMu   sync.Mutex
		dtmfSent []byte
	)
	sentDigit := func(d byte, at time.Time, how string) {
		dtmfMu.Lock()
		dtmfSent = append(dtmfSent, d)
		dtmfMu.Unlock()
		tl.add(at, "dtmf_sent", 0, "", fmt.Sprintf("DTMF %c sent (%s)", d, how))
	}
	var dtmfTimer <-chan time.Time
	if o.digits != "" {
		t := time.NewTimer(o.dtmfDelay)
		defer t.Stop()
		dtmfTimer = t.C
	}
	var dtmfDone <-chan struct{}
	durTimer := time.NewTimer(o.duration)
	defer durTimer.Stop()

	var hangupErr error
loop:
	for {
		select {
		case <-dtmfTimer:
			dtmfTimer = nil
			mode := o.dtmfMode
			if mode == "auto" {
				mode = "info"
				if m.DTMFPayloadType != 0 {
					mode = "rfc4733"
				}
			}
			if mode == "info" {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sendInfoDigits(call.Context(), call, o.digits, func(d byte, err error) {
						if err != nil {
							tl.add(time.Now(), "warning", 0, "", fmt.Sprintf("DTMF %c by SIP INFO refused: %v", d, err))
							return
						}
						sentDigit(d, time.Now(), "SIP INFO application/dtmf-relay, 200 OK")
					})
				}()
				continue
			}
			pt := m.DTMFPayloadType
			if pt == 0 {
				pt = 101
				tl.add(time.Now(), "warning", 0, "", "the answer has no telephone-event; sending RFC 4733 events with payload type 101 anyway")
			}
			how := fmt.Sprintf("RFC 4733 telephone-event %d, %v", pt, dtmf.DefaultKeyDuration)
			s := dtmf.NewSender(pt, dtmf.SendOptions{Interval: m.Ptime})
			defer s.Close()
			if dtmfDone, err = s.Send(o.digits, func(d byte, at time.Time) { sentDigit(d, at, how) }); err != nil {
				tl.add(time.Now(), "warning", 0, "", "DTMF not sent: "+err.Error())
				continue
			}
			sess.Pacer().SetEventSource(s)
		case <-dtmfDone:
			dtmfDone = nil
			sess.Pacer().SetEventSource(nil)
		case <-durTimer.C:
			res.Ended = "local_hangup"
			hangupErr = hangup("duration reached") // may turn out to be remote_bye
			break loop
		case <-call.Context().Done():
			res.Ended = "remote_bye"
			if !errors.Is(context.Cause(call.Context()), sip.ErrRemoteBye) {
				res.Ended = "ended"
				tl.add(time.Now(), "warning", 0, "", "call ended: "+context.Cause(call.Context()).Error())
			}
			break loop
		case <-ctx.Done():
			stop() // a second Ctrl-C kills the process
			res.Ended = "interrupted"
			hangupErr = hangup("interrupted")
			break loop
		}
	}
	res.Duration = time.Since(answeredAt).Seconds()
	if err := sess.Close(); err != nil {
		log.Debug().Err(err).Msg("close media session")
	}
	st := sess.Stats()
	res.RTP = &st
	dtmfMu.Lock()
	res.DTMFSent = string(dtmfSent)
	dtmfMu.Unlock()

	var noRTP error
	select {
	case <-firstRTP:
	default:
		if st.PacketsIn == 0 && time.Since(answeredAt) >= noRTPGrace {
			tl.add(time.Now(), "failed", 0, "", "call failed: no RTP received")
			noRTP = &callFailedError{msg: fmt.Sprintf("no RTP received from the far end in %.1fs (check NAT, firewall, rtp public IP)", res.Duration)}
		}
	}
	tl.printf("call lasted %.2fs after the answer (%s)", res.Duration, strings.ReplaceAll(res.Ended, "_", " "))
	tl.printf("RTP in:  %d packets, %d bytes, lost %d, late %d, jitter %v, concealed %d frames",
		st.PacketsIn, st.BytesIn, st.Lost, st.Late, st.Jitter.Round(10*time.Microsecond), st.Concealed)
	tl.printf("RTP out: %d packets, %d bytes; RTCP in %d, out %d", st.PacketsOut, st.BytesOut, st.RTCPIn, st.RTCPOut)
	if o.digits != "" {
		tl.printf("DTMF sent: %q of %q", res.DTMFSent, o.digits)
	}
	if noRTP != nil {
		return noRTP
	}
	if hangupErr != nil {
		return fmt.Errorf("hangup: %w", hangupErr)
	}
	return nil
}

// loadPhoneAudio reads a WAV file as 8 kHz mono PCM: stereo is mixed
// down, 16/24/48 kHz go through the media resampler, other rates (22050,
// 44100: what espeak-ng and most editors write) through the speech one.
func loadPhoneAudio(path string) ([]int16, error) {
	a, err := wav.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--play: %w", err)
	}
	pcm := a.Mono()
	if a.SampleRate == media.ClockRate {
		return pcm, nil
	}
	rs, err := media.NewResampler(a.SampleRate, media.ClockRate)
	if err != nil {
		if a.SampleRate < 4000 || a.SampleRate > 192000 {
			return nil, fmt.Errorf("--play %s: %d Hz is not a usable sample rate", path, a.SampleRate)
		}
		return media.Convert(pcm, a.SampleRate, media.ClockRate), nil
	}
	return rs.Process(make([]int16, 0, len(pcm)*media.ClockRate/a.SampleRate+1), pcm), nil
}
