package test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/template"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
	"switchboard/sip"
	"switchboard/sip/siptest"
)

// The DTMF end-to-end tests run a real daemon whose agents use the
// "upstream" engine, pointed at a scripted realtime server
// (realtimetest), so each test reads exactly what the model side
// receives. Callers are sipp (playing the captured RFC 4733 pcaps it
// ships, or sending SIP INFO) or a Go caller (sip.Softphone + media.Session)
// that plays generated tones and sends or receives telephone-events.

// dtmfKeyEnv names the environment variable that holds the scripted
// upstream's bearer key for every DTMF test daemon.
const dtmfKeyEnv = "SWITCHBOARD_TEST_DTMF_UPSTREAM_KEY"

var (
	dtmfKeyOnce sync.Once
	// dtmfNumbers makes every test's phone number unique.
	dtmfNumbers atomic.Int32
)

// dtmfEnv is a daemon with a scripted upstream.
type dtmfEnv struct {
	d  *apptest.Daemon
	up *realtimetest.Server
}

// newDTMFEnv starts the daemon; env adds settings as "NAME=value".
func newDTMFEnv(t *testing.T, env ...string) *dtmfEnv {
	t.Helper()
	dtmfKeyOnce.Do(func() { os.Setenv(dtmfKeyEnv, "sk-dtmf-test") })
	up := realtimetest.NewServer(t, realtimetest.Options{APIKey: "sk-dtmf-test"})
	settings := map[string]string{
		"SWITCHBOARD_UPSTREAM_URL":         up.URL(),
		"SWITCHBOARD_UPSTREAM_API_KEY_ENV": dtmfKeyEnv,
		"SWITCHBOARD_RTP_PORTS":            takePorts(t, 20).String(),
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		settings[k] = v
	}
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), settings))
	return &dtmfEnv{d: d, up: up}
}

// number creates an agent with engine upstream and the extra settings,
// routes a new number to it and returns the number.
func (e *dtmfEnv) number(t *testing.T, settings map[string]any) string {
	t.Helper()
	body := map[string]any{"name": "dtmf " + t.Name(), "engine": "upstream"}
	numBody := map[string]any{"origin": "byo_trunk", "name": "dtmf"}
	for k, v := range settings {
		if nk, ok := strings.CutPrefix(k, "number."); ok { // a setting of the number, not the agent
			numBody[nk] = v
			continue
		}
		body[k] = v
	}
	ag := e.d.JSON(t, "POST", "/v1/agents", e.d.OwnerKey, body, 200)["agent_id"].(string)
	num := fmt.Sprintf("+1415556%04d", dtmfNumbers.Add(1))
	numBody["phone_number"], numBody["agent_id"] = num, ag
	e.d.JSON(t, "POST", "/v2/phone-numbers", e.d.OwnerKey, numBody, 200)
	return num
}

// accept returns the upstream connection of the next call.
func (e *dtmfEnv) accept(t *testing.T) *realtimetest.Conn {
	t.Helper()
	c, err := e.up.Accept(ctxFor(t, 15*time.Second))
	require.NoError(t, err)
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// userText waits for the next user text message the model receives and
// requires the response.create that must follow it.
func userText(t *testing.T, ctx context.Context, c *realtimetest.Conn) string {
	t.Helper()
	for {
		ev, err := c.Expect(ctx, realtime.TypeConversationItemCreate)
		require.NoError(t, err)
		it := ev.(*realtime.ConversationItemCreate).Item
		if it.Type != realtime.ItemMessage || it.Role != realtime.RoleUser {
			continue
		}
		require.Len(t, it.Content, 1)
		require.Equal(t, realtime.ContentInputText, it.Content[0].Type)
		_, err = c.Expect(ctx, realtime.TypeResponseCreate)
		require.NoError(t, err, "a digit message must be followed by response.create")
		return it.Content[0].Text
	}
}

// userTexts returns the text of every user message the model received so
// far, in order.
func userTexts(c *realtimetest.Conn) []string {
	var out []string
	for _, ev := range c.Received() {
		if ic, ok := ev.(*realtime.ConversationItemCreate); ok && ic.Item.Role == realtime.RoleUser {
			for _, p := range ic.Item.Content {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// modelText is what the agent sends the model for a flush under the
// default policy.
func modelText(digits string, r dtmf.FlushReason) string {
	return dtmf.Policy{}.ModelText(dtmf.Flush{Digits: digits, Reason: r})
}

// liveCall waits for the daemon's only live call.
func (e *dtmfEnv) liveCall(t *testing.T) *call.Call {
	t.Helper()
	var c *call.Call
	require.Eventually(t, func() bool {
		l := e.d.App.Calls().List()
		if len(l) == 1 {
			c = l[0]
			return true
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	return c
}

// keyLogs returns, in order, the digits of the daemon's "dtmf key" log
// lines with their source ("1/rtp").
func (e *dtmfEnv) keyLogs() []string {
	var out []string
	for _, line := range strings.Split(e.d.Logs.String(), "\n") {
		if !strings.Contains(line, `"message":"dtmf key"`) {
			continue
		}
		out = append(out, field(line, "dtmf")+"/"+field(line, "source"))
	}
	return out
}

func field(line, name string) string {
	i := strings.Index(line, `"`+name+`":"`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+4:]
	return rest[:strings.IndexByte(rest, '"')]
}

// --- sipp -----------------------------------------------------------------

// sippScenario renders testdata/dtmf/<name>.xml.tmpl with data into a file.
func sippScenario(t *testing.T, name string, data any) string {
	t.Helper()
	tmpl, err := template.New(name + ".xml.tmpl").Funcs(template.FuncMap{"add": func(a, b int) int { return a + b }}).
		ParseFiles(filepath.Join("testdata", "dtmf", name+".xml.tmpl"))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tmpl.Execute(&buf, data))
	path := filepath.Join(t.TempDir(), name+".xml")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	return path
}

func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sipp runs one sipp call of scenario to number on the daemon and returns
// when sipp exits; it fails the test when sipp fails.
func (e *dtmfEnv) sipp(t *testing.T, scenario, number string) {
	t.Helper()
	_, err := exec.LookPath("sipp")
	require.NoError(t, err, "sipp must be installed (apt sip-tester)")
	tmp := t.TempDir()
	args := []string{
		e.d.App.SIPAddr().String(), "-sf", scenario, "-s", number, "-m", "1", "-l", "1",
		"-i", "127.0.0.1", "-p", fmt.Sprint(freePort(t, "udp")), "-mp", fmt.Sprint(freePort(t, "udp")),
		"-t", "u1", "-timeout", "25s", "-timeout_error", "-nostdin",
		"-trace_err", "-error_file", filepath.Join(tmp, "err.log"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sipp", args...)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		errLog, _ := os.ReadFile(filepath.Join(tmp, "err.log"))
		s := string(out) + "\n" + string(errLog)
		if len(s) > 4000 {
			s = s[len(s)-4000:]
		}
		t.Fatalf("sipp failed: %v\n%s", err, s)
	}
}

// --- Go caller ------------------------------------------------------------

// caller is a phone made of the Go softphone and a media session.
type caller struct {
	dialer *sip.Softphone
	sess   *media.Session
	oc     *sip.SoftphoneCall
	events *eventQueue

	mu       sync.Mutex
	rx       *dtmf.Receiver
	got      []dtmf.Event
	packets  []eventPacket
	detector *dtmf.Detector
	tones    []dtmf.Event
	evBuf    []dtmf.Event
	// An Opus caller's audio is 24 kHz: up for what it plays, down for
	// its detector.
	w *media.Writer // the caller's voice, 8 kHz PCM whatever the codec
}

// eventPacket is one telephone-event packet the caller received.
type eventPacket struct {
	h       rtp.Header
	payload dtmf.Payload
}

type callerOptions struct {
	// NoEvents offers no telephone-event (in-band DTMF only).
	NoEvents bool
	// OnRefer accepts the daemon's REFER (see sip.DialRequest.OnRefer).
	OnRefer func(string) int
	// Opus offers Opus only (libopus at 24 kHz on the caller's side).
	Opus bool
}

// dial calls number on the daemon.
func (e *dtmfEnv) dial(t *testing.T, number string, o callerOptions) *caller {
	t.Helper()
	r := takePorts(t, 2)
	pool, err := media.NewPortPool(netip.MustParseAddr("127.0.0.1"), r.lo, r.hi)
	require.NoError(t, err)
	t.Cleanup(func() { pool.Close() })
	pair, err := pool.Allocate()
	require.NoError(t, err)
	c := &caller{events: &eventQueue{}, rx: dtmf.NewReceiver(dtmf.ReceiverOptions{}), detector: dtmf.NewDetector(dtmf.DetectorOptions{})}
	so := media.SessionOptions{OnEvent: c.onEvent}
	if o.Opus {
		so.Codec, so.Rate = media.OpusCodec(sip.Opus.PayloadType), 24000 // libopus at 24 kHz
	}
	c.sess, err = media.NewSession(pair, so)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.sess.Close()) })
	_, err = c.sess.ListenPCM(8000, c.onAudio)
	require.NoError(t, err)
	c.w, err = c.sess.Writer(media.PCM16(8000), media.WriterOptions{})
	require.NoError(t, err)
	c.sess.Pacer().SetEventSource(c.events)
	c.dialer = siptest.NewSoftphone(t)
	req := sip.DialRequest{Target: e.d.App.SIPAddr().String(), To: number, From: "+14155550123",
		RTPAddr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(c.sess.LocalPort())), OnRefer: o.OnRefer}
	if o.NoEvents {
		req.DTMFPayloadType = -1
	}
	if o.Opus {
		req.Codecs = []sip.Codec{sip.Opus}
	}
	c.oc, err = c.dialer.Dial(ctxFor(t, 10*time.Second), req)
	require.NoError(t, err)
	c.sess.SetRemote(c.oc.Media().RemoteAddr)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = c.oc.Hangup(ctx, "test over")
	})
	return c
}

func (c *caller) onEvent(h *rtp.Header, payload []byte) {
	p, err := dtmf.ParsePayload(payload)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.packets = append(c.packets, eventPacket{h: *h, payload: p})
	if ev, ok, err := c.rx.Push(h.Timestamp, payload, time.Now()); err == nil && ok {
		c.got = append(c.got, ev)
	}
}

func (c *caller) onAudio(pcm []int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evBuf = c.detector.Process(c.evBuf[:0], pcm, time.Now())
	c.tones = append(c.tones, c.evBuf...)
}

// received returns the digits decoded from telephone-events and from tones.
func (c *caller) received() (events, tones string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return digitString(c.got), digitString(c.tones)
}

func digitString(evs []dtmf.Event) string {
	b := make([]byte, len(evs))
	for i, e := range evs {
		b[i] = e.Digit
	}
	return string(b)
}

// play queues audio on the caller's line (sent at real time).
func (c *caller) play(pcm []int16) { c.w.WritePCM("caller", pcm) }

// playedOut waits until the caller's audio played out over RTP (its
// playout is empty) and live's session then took n more of the caller's
// frames (n × 20 ms past the end of it through the appliance's jitter
// buffer and detectors): whatever the audio holds has been heard.
func (c *caller) playedOut(t *testing.T, live *call.Call, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.sess.Playout().Len() == 0 }, time.Minute, 5*time.Millisecond, "the caller's audio plays out")
	taken := func() uint64 { s := live.Leg().Stats(); return s.Played + s.Concealed + s.Silenced }
	from := taken()
	require.Eventually(t, func() bool { return taken() >= from+uint64(n) }, 10*time.Second, 5*time.Millisecond,
		"the call takes the caller's frames")
}

// sentFor waits until the caller's session sent d of audio past the
// count from (its PacketsOut when the audio started): the caller's own
// audio clock.
func (c *caller) sentFor(t *testing.T, from uint64, d time.Duration) {
	t.Helper()
	n := from + uint64(d/(20*time.Millisecond))
	require.Eventually(t, func() bool { return c.sess.Stats().PacketsOut >= n }, d+10*time.Second, time.Millisecond, "the caller's audio is sent")
}

// press sends keys as RFC 4733 events, each on for `on` and followed by
// `gap` of audio, and waits until they are sent.
func (c *caller) press(t *testing.T, keys string, on, gap time.Duration) {
	t.Helper()
	done := c.events.add(t, keys, on, gap)
	select {
	case <-done:
	case <-time.After(time.Duration(len(keys))*(on+gap+100*time.Millisecond) + 2*time.Second):
		t.Fatal("keys not sent")
	}
}

// eventQueue is the caller's RFC 4733 sender: a media.EventSource that
// replaces audio frames with event packets, every packet of a key at the
// timestamp of its first.
type eventQueue struct {
	mu    sync.Mutex
	steps []eventStep
	ts    uint32
}

type eventStep struct {
	pkt   *dtmf.EventPacket // nil: a gap (audio goes out)
	first bool
	done  chan struct{}
}

func (q *eventQueue) add(t *testing.T, keys string, on, gap time.Duration) <-chan struct{} {
	t.Helper()
	var steps []eventStep
	for i := 0; i < len(keys); i++ {
		pkts, err := dtmf.AppendEventPackets(nil, keys[i], on, dtmf.SendOptions{})
		require.NoError(t, err)
		for j := range pkts {
			steps = append(steps, eventStep{pkt: &pkts[j], first: j == 0})
		}
		for g := time.Duration(0); g < gap; g += 20 * time.Millisecond {
			steps = append(steps, eventStep{})
		}
	}
	done := make(chan struct{})
	steps = append(steps, eventStep{done: done})
	q.mu.Lock()
	q.steps = append(q.steps, steps...)
	q.mu.Unlock()
	return done
}

// NextEvent implements media.EventSource with the test's own key and gap
// lengths (dtmf.Sender keeps the appliance's fixed ones).
func (q *eventQueue) NextEvent(ts uint32) (uint8, bool, uint32, []byte, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.steps) == 0 {
		return 0, false, 0, nil, false
	}
	st := q.steps[0]
	q.steps = q.steps[1:]
	if st.done != nil {
		close(st.done)
		return 0, false, 0, nil, false
	}
	if st.pkt == nil {
		return 0, false, 0, nil, false
	}
	if st.first {
		q.ts = ts
	}
	return 101, st.pkt.Marker, q.ts, st.pkt.Payload.Marshal(), true
}
