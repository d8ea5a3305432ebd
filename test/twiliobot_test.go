package test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twilioBot is a customer's bot as the Twilio Media Streams reference
// describes its server (https://www.twilio.com/docs/voice/media-streams/websocket-messages),
// written from that reference and not from the appliance's code. It
// checks every field of every message it receives (connected, start,
// media, dtmf, mark, stop, in their order, with their sequence numbers,
// chunks and timestamps) and records what breaks the reference; it
// answers the caller as the test asks: echoing their audio in chunks of
// its own size, each followed by a mark whose return it times, or once
// per turn (after a pause in their speech), as a voice bot does.
type twilioBot struct {
	t   *testing.T
	srv *httptest.Server
	// path is the URL path the stream must use; token and secret, when
	// set, the bearer and the Standard Webhooks secret of the upgrade.
	path          string
	token, secret string
	// reply is "chunks" (echo every chunk bytes), "turns" (echo each of
	// the caller's utterances after a pause) or "" (say nothing).
	reply string
	chunk int
	// onStart runs once the start message is checked (the test's script:
	// a tone, a clear, a close).
	onStart func(s *botStream)

	mu       sync.Mutex
	streams  []*botStream
	problems []string
	started  chan *botStream
}

// botStream is one stream the bot served.
type botStream struct {
	bot  *twilioBot
	conn *websocket.Conn
	wmu  sync.Mutex

	// From the start message.
	streamSid, accountSid, callSid string
	tracks                         []string
	params                         map[string]string

	mu        sync.Mutex
	seq       int
	chunks    map[string]int
	lastTS    map[string]int
	inbound   []byte
	outbound  []byte
	digits    string
	marks     []sentMark
	returned  []string
	lateMarks []string
	stopped   bool
	closed    chan struct{}
	// turn detection ("turns")
	utter       []byte
	voicedMs    int
	silentMs    int
	replies     int
	replyMarks  int
	markReturns map[string]time.Duration
}

// sentMark is a mark the bot sent after audio of dur.
type sentMark struct {
	name string
	at   time.Time
	dur  time.Duration // the audio sent just before it
}

func newTwilioBot(t *testing.T, reply string) *twilioBot {
	t.Helper()
	b := &twilioBot{t: t, path: "/media", reply: reply, chunk: 8000, started: make(chan *botStream, 8)}
	up := websocket.Upgrader{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != b.path {
			b.problem("upgrade on path %q, want %q", r.URL.Path, b.path)
		}
		if b.token != "" && r.Header.Get("Authorization") != "Bearer "+b.token {
			b.problem("Authorization %q, want the stream's bearer token", r.Header.Get("Authorization"))
		}
		if b.secret != "" {
			wh, err := standardwebhooks.NewWebhook(b.secret)
			require.NoError(t, err)
			configured := b.url()
			if r.URL.RawQuery != "" {
				configured += "?" + r.URL.RawQuery
			}
			if err := wh.Verify([]byte(configured), r.Header); err != nil {
				b.problem("webhook-signature over the stream's URL %s: %v", configured, err)
			}
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			b.problem("upgrade: %v", err)
			return
		}
		s := &botStream{bot: b, conn: c, chunks: map[string]int{}, lastTS: map[string]int{}, closed: make(chan struct{}),
			markReturns: map[string]time.Duration{}}
		b.mu.Lock()
		b.streams = append(b.streams, s)
		b.mu.Unlock()
		go s.serve()
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// url is the stream URL to configure.
func (b *twilioBot) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + b.path }

func (b *twilioBot) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// requireClean fails the test with every departure from the reference.
func (b *twilioBot) requireClean(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.problems, "the stream broke Twilio's reference")
}

// stream waits for the bot's next started stream.
func (b *twilioBot) stream(t *testing.T, within time.Duration) *botStream {
	t.Helper()
	select {
	case s := <-b.started:
		return s
	case <-time.After(within):
		t.Fatalf("no stream started within %s", within)
	}
	return nil
}

// next reads one message and checks what every message but connected
// carries: the next sequenceNumber and the stream's sid.
func (s *botStream) next() (map[string]any, bool) {
	_, data, err := s.conn.ReadMessage()
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		s.bot.problem("a message that is not a JSON object: %q", data)
		return nil, false
	}
	return m, true
}

func str(m map[string]any, k string) string { v, _ := m[k].(string); return v }

func (s *botStream) serve() {
	b := s.bot
	defer close(s.closed)
	m, ok := s.next()
	if !ok {
		b.problem("no connected message")
		return
	}
	if len(m) != 3 || str(m, "event") != "connected" || str(m, "protocol") != "Call" || str(m, "version") != "1.0.0" {
		b.problem("first message %v, want connected with protocol Call and version 1.0.0", m)
	}
	m, ok = s.next()
	if !ok || str(m, "event") != "start" {
		b.problem("second message %v, want start", m)
		return
	}
	s.checkSeq(m)
	st, _ := m["start"].(map[string]any)
	s.streamSid, s.accountSid, s.callSid = str(st, "streamSid"), str(st, "accountSid"), str(st, "callSid")
	if s.streamSid == "" || str(m, "streamSid") != s.streamSid {
		b.problem("start: streamSid %q and start.streamSid %q", str(m, "streamSid"), s.streamSid)
	}
	if s.accountSid == "" || s.callSid == "" {
		b.problem("start: accountSid %q, callSid %q", s.accountSid, s.callSid)
	}
	tr, _ := st["tracks"].([]any)
	for _, x := range tr {
		v, _ := x.(string)
		if v != "inbound" && v != "outbound" {
			b.problem("start.tracks holds %q", v)
		}
		s.tracks = append(s.tracks, v)
	}
	if len(s.tracks) == 0 {
		b.problem("start.tracks is empty")
	}
	cp, ok := st["customParameters"].(map[string]any)
	if !ok {
		b.problem("start.customParameters is not an object: %v", st["customParameters"])
	}
	s.params = map[string]string{}
	for k, v := range cp {
		s.params[k], _ = v.(string)
	}
	mf, _ := st["mediaFormat"].(map[string]any)
	if str(mf, "encoding") != "audio/x-mulaw" || mf["sampleRate"] != float64(8000) || mf["channels"] != float64(1) {
		b.problem("start.mediaFormat %v, want audio/x-mulaw 8000 1", mf)
	}
	b.started <- s
	if b.onStart != nil {
		go b.onStart(s)
	}
	for {
		m, ok := s.next()
		if !ok {
			return
		}
		s.checkSeq(m)
		if str(m, "streamSid") != s.streamSid {
			b.problem("%s: streamSid %q, want %q", str(m, "event"), str(m, "streamSid"), s.streamSid)
		}
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if stopped {
			b.problem("%s after stop", str(m, "event"))
		}
		switch str(m, "event") {
		case "media":
			s.media(m)
		case "dtmf":
			d, _ := m["dtmf"].(map[string]any)
			digit := str(d, "digit")
			if str(d, "track") != "inbound_track" || len(digit) != 1 || !strings.Contains("0123456789*#ABCD", digit) {
				b.problem("dtmf %v", d)
			}
			s.mu.Lock()
			s.digits += digit
			s.mu.Unlock()
		case "mark":
			s.markBack(m)
		case "stop":
			st, _ := m["stop"].(map[string]any)
			if str(st, "accountSid") != s.accountSid || str(st, "callSid") != s.callSid {
				b.problem("stop %v does not name the start's account and call", st)
			}
			s.mu.Lock()
			s.stopped = true
			s.mu.Unlock()
		default:
			b.problem("event %q is not one Twilio sends", str(m, "event"))
		}
	}
}

// checkSeq checks that sequenceNumber counts the messages from "1".
func (s *botStream) checkSeq(m map[string]any) {
	s.seq++
	if str(m, "sequenceNumber") != strconv.Itoa(s.seq) {
		s.bot.problem("%s: sequenceNumber %q, want %d", str(m, "event"), str(m, "sequenceNumber"), s.seq)
	}
}

func (s *botStream) media(m map[string]any) {
	b := s.bot
	md, _ := m["media"].(map[string]any)
	track := str(md, "track")
	if !slices.Contains(s.tracks, track) {
		b.problem("media of track %q, not in start.tracks %v", track, s.tracks)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunks[track]++
	if str(md, "chunk") != strconv.Itoa(s.chunks[track]) {
		b.problem("media %s: chunk %q, want %d", track, str(md, "chunk"), s.chunks[track])
	}
	ts, err := strconv.Atoi(str(md, "timestamp"))
	if err != nil || ts < 0 || ts < s.lastTS[track] {
		b.problem("media %s: timestamp %q after %d", track, str(md, "timestamp"), s.lastTS[track])
	}
	s.lastTS[track] = ts
	p, err := base64.StdEncoding.DecodeString(str(md, "payload"))
	if err != nil || len(p) == 0 {
		b.problem("media %s: payload is not base64 µ-law: %v", track, err)
		return
	}
	if track == "outbound" {
		s.outbound = append(s.outbound, p...)
		return
	}
	if len(p) != 160 {
		b.problem("inbound media of %d bytes, want 20 ms (160)", len(p))
	}
	s.inbound = append(s.inbound, p...)
	switch b.reply {
	case "chunks":
		s.utter = append(s.utter, p...)
		if len(s.utter) >= b.chunk {
			s.say(s.utter[:b.chunk], fmt.Sprintf("echo-%d", s.replies+1))
			s.utter = append(s.utter[:0], s.utter[b.chunk:]...)
		}
	case "turns":
		voiced := ulawRMS(p) > 400
		switch {
		case voiced:
			s.voicedMs += 20
			s.silentMs = 0
			s.utter = append(s.utter, p...)
		case s.voicedMs > 0:
			s.silentMs += 20
			s.utter = append(s.utter, p...)
			if s.silentMs >= 400 {
				if s.voicedMs >= 300 {
					speech := s.utter[:len(s.utter)-len(p)*(s.silentMs/20)]
					s.say(speech, fmt.Sprintf("turn-%d", s.replies+1))
				}
				s.utter, s.voicedMs, s.silentMs = s.utter[:0], 0, 0
			}
		}
	}
}

// say sends audio as the bot's reply (in pieces of odd sizes, all at
// once: faster than real time, as bots do), then a mark (s.mu held).
func (s *botStream) say(audio []byte, mark string) {
	s.replies++
	dur := time.Duration(len(audio)) * time.Second / 8000
	for len(audio) > 0 {
		n := min(len(audio), 1234)
		s.send(map[string]any{"event": "media", "streamSid": s.streamSid, "media": map[string]any{"payload": base64.StdEncoding.EncodeToString(audio[:n])}})
		audio = audio[n:]
	}
	s.mark(mark, dur)
}

// mark sends a mark after audio of dur (s.mu held).
func (s *botStream) mark(name string, dur time.Duration) {
	s.marks = append(s.marks, sentMark{name: name, at: time.Now(), dur: dur})
	s.send(map[string]any{"event": "mark", "streamSid": s.streamSid, "mark": map[string]any{"name": name}})
}

// markBack checks a returned mark: one the bot sent, in order.
func (s *botStream) markBack(m map[string]any) {
	mk, _ := m["mark"].(map[string]any)
	name := str(mk, "name")
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.returned)
	if i >= len(s.marks) || s.marks[i].name != name {
		s.bot.problem("mark %q returned out of order (returned so far %v)", name, s.returned)
		return
	}
	s.returned = append(s.returned, name)
	s.markReturns[name] = time.Since(s.marks[i].at)
}

// send writes one message to the appliance.
func (s *botStream) send(v any) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.conn.WriteJSON(v); err != nil {
		s.bot.problem("write: %v", err)
	}
}

// sendRaw writes raw text (bad input).
func (s *botStream) sendRaw(text string) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.WriteMessage(websocket.TextMessage, []byte(text))
}

// waitChunks waits until the stream got n media messages of the caller's
// track (n × 20 ms of the call's audio: the appliance sends them at its
// frame clock); a stream that does not reports an error of the test.
func (s *botStream) waitChunks(n int, within time.Duration) {
	assert.Eventually(s.bot.t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.chunks["inbound"] >= n
	}, within, 5*time.Millisecond, "the bot got %d chunks of the caller's audio", n)
}

// snapshot returns what the stream received so far.
func (s *botStream) snapshot() (inbound, outbound []byte, digits string, returned []string, stopped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.inbound...), append([]byte(nil), s.outbound...), s.digits, append([]string(nil), s.returned...), s.stopped
}

// waitClosed waits for the appliance to close the stream.
func (s *botStream) waitClosed(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(within):
		t.Fatalf("the stream is still open after %s", within)
	}
}

// ulawRMS is the level of µ-law audio, decoded per G.711 (ITU-T G.711
// table: sign, exponent, mantissa; bias 0x84).
func ulawRMS(p []byte) float64 {
	var sum float64
	for _, c := range p {
		c = ^c
		t := (int(c&0x0f) << 3) + 0x84
		t <<= (c & 0x70) >> 4
		v := t - 0x84
		if c&0x80 != 0 {
			v = -v
		}
		sum += float64(v * v)
	}
	return math.Sqrt(sum / float64(len(p)))
}
