package conversation_test

// The end-to-end harness of the agent runtime: a full appliance
// (app/apptest) whose "upstream" engine points at a scripted realtime
// server (realtime/realtimetest), agents and numbers created over the HTTP
// API, and a caller made of sip.Softphone plus a raw RTP endpoint that
// timestamps every packet it receives (the measures are taken from the RTP
// the caller gets, not from the appliance's own clocks).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media"
	"switchboard/realtime/realtimetest"
	"switchboard/sip"
	"switchboard/sip/siptest"
)

// The bearer key the scripted upstream wants, and the environment variable
// the appliance reads it from (upstream.api_key_env).
const (
	upstreamKey    = "sk-agenttest-upstream-key"
	upstreamKeyEnv = "SWITCHBOARD_AGENTTEST_UPSTREAM_KEY"
)

var setKeyOnce sync.Once

// upstreamEnv is a daemon wired to a scripted upstream.
type upstreamEnv struct {
	t  *testing.T
	up *realtimetest.Server
	d  *apptest.Daemon
}

// startUpstream starts a scripted upstream (with the bearer key) and a
// daemon whose upstream engine dials it; env adds settings.
func startUpstream(t *testing.T, opts realtimetest.Options, env map[string]string) *upstreamEnv {
	t.Helper()
	setKeyOnce.Do(func() { require.NoError(t, os.Setenv(upstreamKeyEnv, upstreamKey)) })
	opts.APIKey = upstreamKey
	up := realtimetest.NewServer(t, opts)
	e := map[string]string{
		"SWITCHBOARD_UPSTREAM_URL":         up.URL(),
		"SWITCHBOARD_UPSTREAM_API_KEY_ENV": upstreamKeyEnv,
		"SWITCHBOARD_LOG_LEVEL":            "debug",
	}
	for k, v := range env {
		e[k] = v
	}
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), e))
	return &upstreamEnv{t: t, up: up, d: d}
}

var numberSeq atomic.Int64

// agentNumber creates an agent with settings over the API and routes a new
// BYO-trunk number to it; it returns the number.
func (e *upstreamEnv) agentNumber(settings map[string]any) string {
	return routeAgent(e.t, e.d, settings)
}

func routeAgent(t *testing.T, d *apptest.Daemon, settings map[string]any) string {
	t.Helper()
	body := map[string]any{"name": "E2E agent", "instructions": "You are a test agent.", "engine": "upstream"}
	for k, v := range settings {
		body[k] = v
	}
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, body, 200)
	id, _ := ag["agent_id"].(string)
	require.NotEmpty(t, id, "agent: %v", ag)
	number := fmt.Sprintf("+1415555%04d", 2000+numberSeq.Add(1))
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{
		"origin": "byo_trunk", "name": "E2E " + number, "phone_number": number, "agent_id": id}, 200)
	return number
}

// rxFrame is one RTP audio packet the caller received.
type rxFrame struct {
	at     time.Time
	seq    uint16
	ts     uint32
	marker bool
	peak   int // largest absolute sample after G.711 decoding
}

// heard reports whether the frame carries audio (not encoded silence).
// The appliance's pacer sends exact digital silence when nothing is
// queued, which decodes to 0 (PCMU 0xFF) or ±8 (PCMA 0xD5); tones and
// speech peak in the thousands.
func (f rxFrame) heard() bool { return f.peak > heardPeak }

const heardPeak = 64

// caller is one phone: a softphone and an RTP endpoint on loopback.
type caller struct {
	t      *testing.T
	dialer *sip.Softphone
	conn   *net.UDPConn
	call   *sip.SoftphoneCall

	mu       sync.Mutex
	rx       []rxFrame
	pcm      []int16 // everything received, decoded, at 8 kHz
	events   []sip.SoftphoneEvent
	refers   []string
	txQueue  []int16 // caller audio still to send
	remote   netip.AddrPort
	packetCh chan rxFrame
	// arrived is closed (and replaced) when a packet arrives: the
	// waits below wake on it instead of polling.
	arrived chan struct{}

	referStatus int
	stop        chan struct{}
	wg          sync.WaitGroup
	closeOnce   sync.Once
}

// callOptions tune a call.
type callOptions struct {
	// ReferStatus, when set, accepts REFERs and reports that final status.
	ReferStatus int
	// Timeout bounds the INVITE (default 10 s).
	Timeout time.Duration
}

// dial calls number on d; it returns the caller even when the call fails
// (with the error), so tests can look at the timeline.
func dial(t *testing.T, d *apptest.Daemon, number string, o callOptions) (*caller, error) {
	t.Helper()
	dl := siptest.NewSoftphone(t)
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	c := &caller{t: t, dialer: dl, conn: conn, packetCh: make(chan rxFrame, 4096), arrived: make(chan struct{}), referStatus: o.ReferStatus, stop: make(chan struct{})}
	t.Cleanup(c.close)
	c.wg.Add(1)
	go c.readRTP()
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	req := sip.DialRequest{
		Target: d.App.SIPAddr().String(), To: number, From: "e2e-caller",
		RTPAddr: netip.MustParseAddrPort(conn.LocalAddr().String()), Codecs: []sip.Codec{sip.PCMU},
		OnEvent: func(e sip.SoftphoneEvent) { c.mu.Lock(); c.events = append(c.events, e); c.mu.Unlock() },
	}
	if o.ReferStatus != 0 {
		req.OnRefer = func(to string) int {
			c.mu.Lock()
			c.refers = append(c.refers, to)
			c.mu.Unlock()
			return o.ReferStatus
		}
	}
	call, err := dl.Dial(ctx, req)
	if err != nil {
		return c, err
	}
	c.call = call
	c.mu.Lock()
	c.remote = call.Media().RemoteAddr
	c.mu.Unlock()
	c.wg.Add(1)
	go c.sendRTP()
	return c, nil
}

// close hangs up (if still up) and releases the sockets.
func (c *caller) close() {
	c.closeOnce.Do(func() {
		if c.call != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_ = c.call.Hangup(ctx, "test over")
			cancel()
		}
		close(c.stop)
		_ = c.conn.Close()
		c.wg.Wait()
		_ = c.dialer.Close()
	})
}

func (c *caller) readRTP() {
	defer c.wg.Done()
	buf := make([]byte, 1500)
	var p rtp.Packet
	var pcm []int16
	for {
		n, err := c.conn.Read(buf)
		at := time.Now()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if p.Unmarshal(buf[:n]) != nil {
			continue
		}
		codec, ok := media.CodecByPayloadType(p.PayloadType)
		if !ok {
			continue
		}
		pcm = codec.DecodeFrame(pcm[:0], p.Payload)
		peak := 0
		for _, s := range pcm {
			v := int(s)
			if v < 0 {
				v = -v
			}
			peak = max(peak, v)
		}
		f := rxFrame{at: at, seq: p.SequenceNumber, ts: p.Timestamp, marker: p.Marker, peak: peak}
		c.mu.Lock()
		c.rx = append(c.rx, f)
		c.pcm = append(c.pcm, pcm...)
		close(c.arrived)
		c.arrived = make(chan struct{})
		c.mu.Unlock()
		select {
		case c.packetCh <- f:
		default:
		}
	}
}

// sendRTP sends one 20 ms PCMU frame per 20 ms: queued caller audio, else
// silence (so the appliance's media timeout never fires).
func (c *caller) sendRTP() {
	defer c.wg.Done()
	h := rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: uint16(rand.Uint32()), Timestamp: rand.Uint32(), SSRC: rand.Uint32() | 1}
	frame := make([]int16, 160)
	var payload []byte
	buf := make([]byte, 1500)
	tk := time.NewTicker(20 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tk.C:
		}
		c.mu.Lock()
		n := copy(frame, c.txQueue)
		c.txQueue = c.txQueue[n:]
		remote := c.remote
		c.mu.Unlock()
		clear(frame[n:])
		payload = media.PCMU.EncodeFrame(payload[:0], frame)
		k, _ := h.MarshalTo(buf)
		k += copy(buf[k:], payload)
		_, _ = c.conn.WriteToUDPAddrPort(buf[:k], remote)
		h.SequenceNumber++
		h.Timestamp += 160
	}
}

// say queues caller audio (8 kHz).
func (c *caller) say(pcm []int16) {
	c.mu.Lock()
	c.txQueue = append(c.txQueue, pcm...)
	c.mu.Unlock()
}

// frames returns the received packets so far.
func (c *caller) frames() []rxFrame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rxFrame(nil), c.rx...)
}

// timeline returns the softphone's events.
func (c *caller) timeline() []sip.SoftphoneEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sip.SoftphoneEvent(nil), c.events...)
}

func (c *caller) event(kind string) (sip.SoftphoneEvent, bool) {
	for _, e := range c.timeline() {
		if e.Kind == kind {
			return e, true
		}
	}
	return sip.SoftphoneEvent{}, false
}

func (c *caller) referred() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.refers...)
}

// framesUntil calls done with the frames received so far, again on each
// packet that arrives, until it reports true (then true) or timeout
// passed (then false).
func (c *caller) framesUntil(timeout time.Duration, done func([]rxFrame) bool) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		c.mu.Lock()
		fs, arrived := append([]rxFrame(nil), c.rx...), c.arrived
		c.mu.Unlock()
		if done(fs) {
			return true
		}
		select {
		case <-arrived:
		case <-timer.C:
			return false
		}
	}
}

// waitHeard waits until the caller received audio after since and returns
// the first such frame.
func (c *caller) waitHeard(since time.Time, timeout time.Duration) rxFrame {
	c.t.Helper()
	var first rxFrame
	if !c.framesUntil(timeout, func(fs []rxFrame) bool {
		for _, f := range fs {
			if f.at.After(since) && f.heard() {
				first = f
				return true
			}
		}
		return false
	}) {
		c.t.Fatalf("caller heard nothing within %v", timeout)
	}
	return first
}

// hear waits until the caller heard n frames of audio (20 ms each) after
// since.
func (c *caller) hear(since time.Time, n int, timeout time.Duration) {
	c.t.Helper()
	if !c.framesUntil(timeout, func(fs []rxFrame) bool {
		k := 0
		for _, f := range fs {
			if f.at.After(since) && f.heard() {
				k++
			}
		}
		return k >= n
	}) {
		c.t.Fatalf("caller did not hear %d frames within %v", n, timeout)
	}
}

// waitPast waits until the caller received a packet after at: the call's
// media ran until then.
func (c *caller) waitPast(at time.Time, timeout time.Duration) {
	c.t.Helper()
	if !c.framesUntil(timeout, func(fs []rxFrame) bool { return len(fs) > 0 && fs[len(fs)-1].at.After(at) }) {
		c.t.Fatalf("caller received nothing after %v within %v", at, timeout)
	}
}

// waitSilence waits until the caller received n silent frames in a row
// after since.
func (c *caller) waitSilence(since time.Time, n int, timeout time.Duration) {
	c.t.Helper()
	if !c.framesUntil(timeout, func(fs []rxFrame) bool {
		run := 0
		for _, f := range fs {
			if !f.at.After(since) {
				continue
			}
			if f.heard() {
				run = 0
			} else {
				run++
			}
		}
		return run >= n
	}) {
		c.t.Fatalf("caller still hears audio after %v", timeout)
	}
}

// heardMs is how much audio (ms, 20 ms per heard frame) arrived in
// (from, to].
func (c *caller) heardMs(from, to time.Time) int {
	n := 0
	for _, f := range c.frames() {
		if f.at.After(from) && !f.at.After(to) && f.heard() {
			n++
		}
	}
	return 20 * n
}

// waitEnded waits for the call to end and returns the BYE's Reason header
// ("" when the caller hung up itself).
func (c *caller) waitEnded(timeout time.Duration) string {
	c.t.Helper()
	select {
	case <-c.call.Context().Done():
	case <-time.After(timeout):
		c.t.Fatalf("call still up after %v; timeline %v", timeout, kinds(c.timeline()))
	}
	e, ok := c.event("bye_received")
	require.True(c.t, ok, "the appliance did not send BYE: %v", kinds(c.timeline()))
	return e.Detail
}

func kinds(evs []sip.SoftphoneEvent) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// waitIdle waits until the daemon has no call left.
func waitIdle(t *testing.T, d *apptest.Daemon) {
	t.Helper()
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 10*time.Second, 10*time.Millisecond)
}

// dist summarises durations for logs and docs/benchmarks.md.
type dist []time.Duration

func (d dist) q(p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append(dist(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s)-1) + 0.5)
	return s[i]
}

func (d dist) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "n=%d min=%v p50=%v p90=%v p99=%v max=%v", len(d), d.q(0).Round(10*time.Microsecond), d.q(.5).Round(10*time.Microsecond),
		d.q(.9).Round(10*time.Microsecond), d.q(.99).Round(10*time.Microsecond), d.q(1).Round(10*time.Microsecond))
	return b.String()
}
