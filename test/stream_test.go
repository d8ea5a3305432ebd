package test

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
)

// streamNumber routes a new number to stream and returns the signing
// secret its creation showed once.
func streamNumber(t *testing.T, d *apptest.Daemon, number string, stream map[string]any) string {
	t.Helper()
	m := d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "stream " + number,
		"phone_number": number, "stream": stream}, 200)
	st, _ := m["stream"].(map[string]any)
	secret, _ := st["signing_secret"].(string)
	require.NotEmpty(t, secret, "the number's signing secret is shown once: %v", m)
	return secret
}

// streamDaemon is callDaemon whose log tail is shown when the test fails.
func streamDaemon(t *testing.T, env map[string]string) *apptest.Daemon {
	t.Helper()
	d := callDaemon(t, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon: %s", tail(d.Logs.String(), 6000))
		}
	})
	return d
}

// eventTexts are the texts of a record's events.
func eventTexts(rec map[string]any) []string {
	var out []string
	evs, _ := rec["events"].([]any)
	for _, e := range evs {
		m, _ := e.(map[string]any)
		s, _ := m["text"].(string)
		out = append(out, s)
	}
	return out
}

// hasPrefixIn reports whether a text of texts starts with prefix.
func hasPrefixIn(texts []string, prefix string) bool {
	for _, s := range texts {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// endedRecord waits for call id's record to be ended and returns it.
func endedRecord(t *testing.T, d *apptest.Daemon, id string) map[string]any {
	t.Helper()
	return waitRecord(t, d, id, 15*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
}

// TestStreamSippEchoMarksTransfer: sipp calls a number routed to a
// bot's stream (track both). The bot, written from Twilio's reference,
// checks every message: the signed upgrade, connected, start (call id,
// team, parameters, tracks, µ-law), every media frame; it echoes the
// caller in chunks of 0.5 s, each followed by a mark, and each mark comes
// back only once its audio was played (never sooner than the chunk
// lasts); the outbound track is exactly the audio the caller heard. A
// transfer through the API moves the caller on, and the bot gets stop and
// a normal close.
func TestStreamSippEchoMarksTransfer(t *testing.T) {
	bot := newTwilioBot(t, "chunks")
	bot.chunk, bot.token = 4000, "bot-token-1"
	d := streamDaemon(t, nil)
	bot.secret = streamNumber(t, d, "+14155550190", map[string]any{"url": bot.url() + "?room=7",
		"parameters": map[string]string{"tier": "gold", "lang": "en"}, "auth_token": "bot-token-1", "track": "both"})
	r := startSipp(t, d, "14155550190", sippControl{Mode: "refer", Audio: true, ReferTo: "sip:human@example.com", NotifyStatus: "200 OK",
		ByeReason: "transferred"}, 1, 1)
	s := bot.stream(t, 15*time.Second)
	c := liveCall(t, d)
	require.Equal(t, c.ID(), s.callSid, "callSid is the call id")
	require.Equal(t, "default", s.accountSid, "accountSid is the team")
	require.Equal(t, map[string]string{"tier": "gold", "lang": "en"}, s.params)
	require.Equal(t, []string{"inbound", "outbound"}, s.tracks)

	require.Eventually(t, func() bool { _, _, _, ret, _ := s.snapshot(); return len(ret) >= 4 }, 20*time.Second, 20*time.Millisecond,
		"four echoes played and their marks returned")
	d.JSON(t, "POST", "/v1/realtime/calls/"+c.ID()+"/refer", d.OwnerKey, map[string]any{"target_uri": "sip:human@example.com"}, 200)
	r.wait(t, 30*time.Second)
	s.waitClosed(t, 10*time.Second)
	requireNoCalls(t, d)

	inbound, outbound, _, returned, stopped := s.snapshot()
	require.True(t, stopped, "stop before the close")
	require.GreaterOrEqual(t, len(inbound), 4*4000)
	require.GreaterOrEqual(t, len(outbound), 4*4000, "the outbound track carries the echo as it was played")
	require.Equal(t, inbound[:len(outbound)], outbound, "what the caller heard is the bot's audio, byte for byte")
	s.mu.Lock()
	for _, name := range returned {
		took := s.markReturns[name]
		t.Logf("mark %s back after %v", name, took)
		require.GreaterOrEqual(t, took, 500*time.Millisecond-60*time.Millisecond, "mark %s came back before its 0.5 s of audio could play", name)
		require.Less(t, took, 3*time.Second, "mark %s", name)
	}
	s.mu.Unlock()
	bot.requireClean(t)

	rec := endedRecord(t, d, c.ID())
	require.Equal(t, "stream", rec["route"])
	require.Equal(t, "appliance", rec["ended_by"])
	require.Equal(t, "transferred", rec["end_reason"])
	texts := eventTexts(rec)
	require.Contains(t, texts, "stream open")
	require.True(t, hasPrefixIn(texts, "stream closed"), "%v", texts)
	require.NotEmpty(t, recordEvents(rec, "transfer"))
}

// sentenceWAV synthesises a sentence and pads it for baresip's aufile source
// (8 kHz mono S16): padBefore and padAfter seconds of silence.
func sentenceWAV(t *testing.T, dir string, padBefore, padAfter float64) string {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed (apt install espeak-ng sox)", tool)
	}
	raw, out := filepath.Join(dir, "espeak.wav"), filepath.Join(dir, "speech.wav")
	b, err := exec.Command("espeak-ng", "-w", raw, "Hello bot. Please read this sentence back to me, word for word.").CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "8000", "-c", "1", "-b", "16", out, "pad", fmt.Sprint(padBefore), fmt.Sprint(padAfter)).CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

// runBaresip calls number on d with the WAV as baresip's microphone and
// returns its recording of what it heard, once it hung up at the WAV's end.
func runBaresip(t *testing.T, d *apptest.Daemon, number, wav string) (heard []int16, c *call.Call) {
	t.Helper()
	b := launchBaresip(t, t.TempDir(), baresipConf{source: wav}, "sip:"+number+"@"+d.App.SIPAddr().String(), 45*time.Second)
	defer b.stop()
	buf, rec := b.out, b.rec
	c = liveCall(t, d, func() string { return tail(buf.String(), 3000) })
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 40*time.Second, 50*time.Millisecond,
		"baresip did not hang up at the end of its WAV: %s", tail(buf.String(), 3000))
	// The recording closes after the BYE: its header then gives its
	// whole length.
	var decs []string
	require.Eventually(t, func() bool {
		decs, _ = filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
		return len(decs) == 1 && wavClosed(decs[0])
	}, 10*time.Second, 20*time.Millisecond, "baresip's recording: %s", tail(buf.String(), 3000))
	heard, rate, err := readWAV(decs[0])
	require.NoError(t, err)
	require.Equal(t, 8000, rate)
	return heard, c
}

// TestStreamBaresipTurns: baresip says a sentence to a bot that answers
// each of the caller's turns (its whole utterance sent at once after a
// pause, faster than real time, as a voice bot's TTS does): baresip hears
// its sentence back, queued and paced by the appliance; the call is
// recorded, and its record measures the turn from the end of baresip's
// speech to the bot's first audio.
func TestStreamBaresipTurns(t *testing.T) {
	bot := newTwilioBot(t, "turns")
	d := streamDaemon(t, nil)
	bot.secret = streamNumber(t, d, "+14155550191", map[string]any{"url": bot.url()})
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+numberID(t, d, "+14155550191"), d.OwnerKey, map[string]any{"recording": map[string]any{"enabled": true}}, 200)
	wav := sentenceWAV(t, t.TempDir(), 0.5, 7)
	heard, c := runBaresip(t, d, "14155550191", wav)
	s := bot.stream(t, time.Second)
	s.waitClosed(t, 10*time.Second)
	_, _, _, returned, stopped := s.snapshot()
	require.True(t, stopped)
	require.NotEmpty(t, returned, "the reply's mark came back once it played")
	bot.requireClean(t)

	said, _, err := readWAV(wav)
	require.NoError(t, err)
	windows, matched, median := echoWindows(said, heard, 0, 9*8000, 0.7)
	rev := make([]int16, len(said))
	for i, v := range said {
		rev[len(said)-1-i] = v
	}
	ctlWindows, ctlMatched, _ := echoWindows(rev, heard, 0, 9*8000, 0.7)
	t.Logf("baresip heard %.1f s; %d/%d speech windows heard back, median lag %v; control %d/%d", float64(len(heard))/8000,
		matched, windows, time.Duration(median)*time.Second/8000, ctlMatched, ctlWindows)
	require.GreaterOrEqual(t, windows, 8)
	require.GreaterOrEqual(t, float64(matched), 0.5*float64(windows), "baresip heard its sentence from the bot")
	require.LessOrEqual(t, float64(ctlMatched), 0.2*float64(ctlWindows), "reversed speech must not match")

	rec := endedRecord(t, d, c.ID())
	require.Equal(t, "stream", rec["route"])
	require.Equal(t, "caller", rec["ended_by"])
	media := rec["media"].(map[string]any)
	turns := media["turn_latency"].(map[string]any)
	t.Logf("turn latency %v", turns)
	require.GreaterOrEqual(t, turns["count"], float64(1), "the turn from the caller's speech end to the bot's first audio is measured")
	require.Less(t, turns["p50_ms"], float64(3000))
	require.NotNil(t, rec["recording"], "the streamed call is recorded")
	st, _, raw := d.Do(t, "GET", "/v1/calls/"+c.ID()+"/recording", d.OwnerKey, nil)
	require.Equal(t, 200, st)
	require.Greater(t, len(raw), 8000*2*2, "a recording of the call")
}

// TestStreamClearAndHangup: a bot that starts a 10 s announcement and
// clears it a second later (barge-in): the caller's queue is flushed at
// once, the announcement's mark comes back at the clear and not after
// 10 s, the record counts the barge-in. The API's hangup ends the call:
// the caller gets a BYE with the reason, the bot stop and a close.
func TestStreamClearAndHangup(t *testing.T) {
	bot := newTwilioBot(t, "")
	tone := make([]byte, 10*8000)
	for i := range tone {
		tone[i] = ulawOf(int16(6000 * math.Sin(2*math.Pi*440*float64(i)/8000)))
	}
	cleared := make(chan time.Time, 1)
	bot.onStart = func(s *botStream) {
		s.mu.Lock()
		s.say(tone, "announcement")
		s.mu.Unlock()
		s.waitChunks(50, 10*time.Second) // a second of the call
		cleared <- time.Now()
		s.send(map[string]any{"event": "clear", "streamSid": s.streamSid})
	}
	d := streamDaemon(t, nil)
	bot.secret = streamNumber(t, d, "+14155550192", map[string]any{"url": bot.url()})
	r := startSipp(t, d, "14155550192", sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
	s := bot.stream(t, 15*time.Second)
	c := liveCall(t, d)
	at := <-cleared
	require.Eventually(t, func() bool { _, _, _, ret, _ := s.snapshot(); return len(ret) == 1 }, 5*time.Second, 5*time.Millisecond)
	s.mu.Lock()
	took := s.markReturns["announcement"]
	s.mu.Unlock()
	t.Logf("announcement mark back %v after it was sent, %v after the clear", took, time.Since(at))
	require.Less(t, took, 3*time.Second, "clear answered the mark at once")
	require.Greater(t, took, 900*time.Millisecond, "not before the clear")
	require.Zero(t, c.Pending(), "the caller's queue is empty after clear")

	d.JSON(t, "POST", "/v1/realtime/calls/"+c.ID()+"/hangup", d.OwnerKey, map[string]any{}, 200)
	r.wait(t, 20*time.Second)
	s.waitClosed(t, 10*time.Second)
	_, _, _, _, stopped := s.snapshot()
	require.True(t, stopped)
	bot.requireClean(t)
	rec := endedRecord(t, d, c.ID())
	require.Equal(t, "hung up by the API", rec["end_reason"])
	require.Equal(t, float64(1), rec["media"].(map[string]any)["barge_ins"], "clear is a barge-in")
}

// ulawOf encodes a sample as G.711 µ-law (the bot's own encoder).
func ulawOf(v int16) byte {
	const bias, clip = 0x84, 32635
	s := int(v)
	sign := 0
	if s < 0 {
		s, sign = -s, 0x80
	}
	s = min(s, clip) + bias
	exp := 7
	for mask := 0x4000; s&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	mant := (s >> (exp + 3)) & 0x0f
	return ^byte(sign | exp<<4 | mant)
}

// TestStreamDTMF: the caller's RFC 4733 keys (sipp's captured events) go
// to the bot as dtmf messages of the inbound track.
func TestStreamDTMF(t *testing.T) {
	bot := newTwilioBot(t, "")
	d := streamDaemon(t, nil)
	bot.secret = streamNumber(t, d, "+14155550193", map[string]any{"url": bot.url()})
	scen := sippScenario(t, "call", scenarioData{PT: 101, Steps: pcapSteps(sippPcaps, "1", "2", "3", "pound")})
	res := runSipp(t, d.App.SIPAddr(), scen, "14155550193")
	res.requireOK(t)
	s := bot.stream(t, time.Second)
	s.waitClosed(t, 10*time.Second)
	_, _, digits, _, stopped := s.snapshot()
	require.Equal(t, "123#", digits)
	require.True(t, stopped)
	bot.requireClean(t)
}

// hangingBot accepts TCP connections and never answers the upgrade.
func hangingBot(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "ws://" + l.Addr().String() + "/media"
}

// TestStreamBotUnreachable: a bot that never answers the upgrade leaves
// the caller an error tone, then a BYE whose reason the record keeps; with
// a fallback agent, the agent takes the call instead.
func TestStreamBotUnreachable(t *testing.T) {
	d := streamDaemon(t, map[string]string{"SWITCHBOARD_STREAMS_CONNECT_TIMEOUT": "1s"})
	url := hangingBot(t)
	streamNumber(t, d, "+14155550194", map[string]any{"url": url})
	began := time.Now()
	r := startSipp(t, d, "14155550194", sippControl{ByeReason: "stream unavailable"}, 1, 1)
	c := liveCall(t, d)
	r.wait(t, 20*time.Second)
	t.Logf("answered, tone played and hung up %v after the INVITE", time.Since(began))
	rec := endedRecord(t, d, c.ID())
	require.Equal(t, "appliance", rec["ended_by"])
	require.Equal(t, "stream unavailable", rec["end_reason"])
	require.True(t, hasPrefixIn(eventTexts(rec), "stream unavailable: stream: the bot is unreachable: no upgrade within 1s"), "%v", eventTexts(rec))
	require.GreaterOrEqual(t, rec["media"].(map[string]any)["first_audio_ms"], float64(0), "the caller heard the error tone")

	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "fallback"}, 200)
	streamNumber(t, d, "+14155550195", map[string]any{"url": url, "fallback_agent_id": ag["agent_id"]})
	r = startSipp(t, d, "14155550195", sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
	c = liveCall(t, d)
	goesOn(t, c, 50, "the fallback agent holds the call")
	d.JSON(t, "POST", "/v1/realtime/calls/"+c.ID()+"/hangup", d.OwnerKey, map[string]any{}, 200)
	r.wait(t, 20*time.Second)
	rec = endedRecord(t, d, c.ID())
	require.Contains(t, eventTexts(rec), "stream fallback: the call goes to the fallback agent")
	require.Equal(t, "hung up by the API", rec["end_reason"])
}

// TestStreamBotLeaves: the bot closing its socket ends the call with the
// reason; with a fallback agent the agent goes on with the caller.
func TestStreamBotLeaves(t *testing.T) {
	bot := newTwilioBot(t, "")
	bot.onStart = func(s *botStream) {
		s.waitChunks(25, 10*time.Second) // half a second of the call
		s.wmu.Lock()
		_ = s.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "goodbye"))
		s.wmu.Unlock()
	}
	d := streamDaemon(t, nil)
	bot.secret = streamNumber(t, d, "+14155550196", map[string]any{"url": bot.url()})
	r := startSipp(t, d, "14155550196", sippControl{Audio: true, ByeReason: "stream closed by the bot"}, 1, 1)
	c := liveCall(t, d)
	r.wait(t, 20*time.Second)
	rec := endedRecord(t, d, c.ID())
	require.Equal(t, "stream closed by the bot", rec["end_reason"])
	require.Contains(t, eventTexts(rec), "stream ended: the bot closed the stream (1000 goodbye)")
	bot.requireClean(t)

	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "fallback"}, 200)
	streamNumber(t, d, "+14155550197", map[string]any{"url": bot.url(), "fallback_agent_id": ag["agent_id"]})
	r = startSipp(t, d, "14155550197", sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
	c = liveCall(t, d)
	require.Eventually(t, func() bool {
		return hasPrefixIn(noteTexts(c), "stream fallback")
	}, 10*time.Second, 20*time.Millisecond, "the fallback agent takes the call")
	goesOn(t, c, 25, "the fallback agent holds the call")
	d.JSON(t, "POST", "/v1/realtime/calls/"+c.ID()+"/hangup", d.OwnerKey, map[string]any{}, 200)
	r.wait(t, 20*time.Second)
}

// goesOn waits until the appliance sent the caller n more frames of c
// (n × 20 ms of its frame clock: the call was up all along), then
// requires c still active.
func goesOn(t *testing.T, c *call.Call, n int, msg string) {
	t.Helper()
	sent := c.Leg().Stats().PacketsOut
	require.Eventually(t, func() bool { return c.Leg().Stats().PacketsOut >= sent+uint64(n) }, 20*time.Second, 10*time.Millisecond,
		"the appliance stopped sending the caller's media: %s", msg)
	require.Equal(t, call.StateActive, c.Snapshot().State, msg)
}

// noteTexts are the texts of a live call's notes.
func noteTexts(c *call.Call) []string {
	var out []string
	for _, n := range c.Snapshot().Notes {
		out = append(out, n.Text)
	}
	return out
}

// TestStreamHostileBot: a bot that sends invalid JSON, unknown events,
// payloads that are not base64 or hold no audio, and a minute of audio
// at once: each bad message is refused and counted (noted once per
// kind), the flood is cut to streams.max_queue (the oldest dropped,
// counted), and the call goes on.
func TestStreamHostileBot(t *testing.T) {
	bot := newTwilioBot(t, "")
	flooded := make(chan struct{})
	bot.onStart = func(s *botStream) {
		for _, bad := range []string{`{"event":"media","media":{"payload":"AAA`, `{"event":"dance"}`, `{"event":"media","media":{"payload":"@@@@"}}`,
			`{"event":"media","media":{"payload":""}}`, `{"event":"mark"}`, `"just a string"`} {
			s.sendRaw(bad)
		}
		minute := bytes.Repeat([]byte{0xff}, 60*8000)
		s.mu.Lock()
		s.say(minute, "flood")
		s.mu.Unlock()
		close(flooded)
	}
	d := streamDaemon(t, map[string]string{"SWITCHBOARD_STREAMS_MAX_QUEUE": "2s"})
	bot.secret = streamNumber(t, d, "+14155550198", map[string]any{"url": bot.url()})
	r := startSipp(t, d, "14155550198", sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
	c := liveCall(t, d)
	<-flooded
	require.Eventually(t, func() bool { return hasPrefixIn(noteTexts(c), "stream: the bot sends audio faster than real time") },
		10*time.Second, 20*time.Millisecond)
	require.LessOrEqual(t, c.Pending(), 2*time.Second, "the queue is bounded")
	goesOn(t, c, 25, "the call goes on")
	d.JSON(t, "POST", "/v1/realtime/calls/"+c.ID()+"/hangup", d.OwnerKey, map[string]any{}, 200)
	r.wait(t, 20*time.Second)
	rec := endedRecord(t, d, c.ID())
	texts := eventTexts(rec)
	for _, reason := range []string{"invalid_json", "unknown_event", "bad_base64", "missing_payload", "missing_mark_name"} {
		require.True(t, hasPrefixIn(texts, "stream: message refused ("+reason+")"), "%s in %v", reason, texts)
	}
	var closed map[string]any
	for _, e := range recordEvents(rec, "event") {
		if strings.HasPrefix(e["text"].(string), "stream closed") {
			closed = e["data"].(map[string]any)
		}
	}
	require.NotNil(t, closed)
	t.Logf("stream figures: %v", closed)
	require.Equal(t, map[string]any{"invalid_json": float64(2), "unknown_event": float64(1), "bad_base64": float64(1),
		"missing_payload": float64(1), "missing_mark_name": float64(1)}, closed["refused"])
	require.GreaterOrEqual(t, closed["audio_dropped_ms"], float64(55000), "a minute of audio, 2 s kept")
	metrics := scrapeMetrics(t, d.URL)
	require.Contains(t, metrics, `switchboard_stream_messages_refused_total{reason="invalid_json"} 2`)
	require.Contains(t, metrics, "switchboard_stream_audio_dropped_seconds_total")
}

// TestControllerSendsCallToStream: a webhook controller sends its ringing
// call to a bot (POST /v1/calls/{call_id}/stream): the call is answered
// once the stream is open, the upgrade is signed with the number's
// webhook secret, the bot echoes the caller.
func TestControllerSendsCallToStream(t *testing.T) {
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, nil, h, "+14155550199")
	bot := newTwilioBot(t, "chunks")
	bot.chunk, bot.token = 2000, "tok-9"
	bot.secret, _ = h.secret.Load().(string)
	r := startSipp(t, d, "14155550199", sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
	ev := h.next(t, "realtime.call.incoming", 10*time.Second)
	id := ev.Data["call_id"].(string)
	st, _, raw := d.Do(t, "POST", "/v1/calls/"+id+"/stream", d.OwnerKey, map[string]any{"url": "ws://169.254.169.254/x"})
	require.Equal(t, 400, st, "%s", raw)
	res := d.JSON(t, "POST", "/v1/calls/"+id+"/stream", d.OwnerKey, map[string]any{"url": bot.url(), "auth_token": "tok-9"}, 200)
	s := bot.stream(t, 10*time.Second)
	require.Equal(t, res["stream_sid"], s.streamSid)
	require.Equal(t, id, s.callSid)
	c := liveCall(t, d)
	require.Equal(t, id, c.ID())
	require.Eventually(t, func() bool { _, _, _, ret, _ := s.snapshot(); return len(ret) >= 2 }, 15*time.Second, 20*time.Millisecond)
	st, _, raw = d.Do(t, "POST", "/v1/calls/"+id+"/stream", d.OwnerKey, map[string]any{"url": bot.url()})
	require.Equal(t, 409, st, "%s", raw)
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, map[string]any{}, 200)
	r.wait(t, 20*time.Second)
	s.waitClosed(t, 10*time.Second)
	bot.requireClean(t)
	rec := endedRecord(t, d, id)
	require.Contains(t, eventTexts(rec), "the controller sent the call to a stream")
}

// TestPlacedCallToStream: POST /v1/calls with a stream: the callee (sipp)
// answers and talks with the bot, which hears them from the answer on
// (their "hello" is not held back for the machine detector's opening).
func TestPlacedCallToStream(t *testing.T) {
	bot := newTwilioBot(t, "chunks")
	bot.chunk = 2000
	hello, _ := calleePcap(t, espeakPCM(t, "Hello, who is this?"), silencePCM(3*time.Second))
	d, sipp, _, _ := outboundSetup(t, callee{Name: "stream", Pcap: hello, CalleeBye: true, TalkMs: 4000}, "+14155550160")
	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550123", "from": "+14155550160",
		"stream": map[string]any{"url": bot.url(), "parameters": map[string]string{"campaign": "renewals"}}}, 201)
	id := rec["call_id"].(string)
	require.Equal(t, "stream", rec["route"])
	s := bot.stream(t, 10*time.Second)
	require.Equal(t, id, s.callSid)
	require.Equal(t, map[string]string{"campaign": "renewals"}, s.params)
	sipp.wait(t, 30*time.Second)
	s.waitClosed(t, 10*time.Second)
	inbound, _, _, returned, stopped := s.snapshot()
	require.True(t, stopped)
	t.Logf("the bot heard %.2f s of the callee's 4 s", float64(len(inbound))/8000)
	require.GreaterOrEqual(t, len(inbound), 7*8000/2, "the bot hears the callee from the answer on, their hello too (not from the opening)")
	require.NotEmpty(t, returned, "the bot's audio played to the callee")
	bot.requireClean(t)
	rec = endedRecord(t, d, id)
	require.Equal(t, "callee", rec["ended_by"])
}

// audioSocketBot is an AudioSocket server written from Asterisk's
// protocol definition: it reads the UUID, then echoes each audio packet.
func audioSocketBot(t *testing.T) (url string, ids chan string, got chan int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ids, got = make(chan string, 1), make(chan int, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		total := 0
		defer func() { got <- total }()
		for {
			var h [3]byte
			if _, err := io.ReadFull(c, h[:]); err != nil {
				return
			}
			p := make([]byte, int(h[1])<<8|int(h[2]))
			if _, err := io.ReadFull(c, p); err != nil {
				return
			}
			switch h[0] {
			case 0x01:
				ids <- fmt.Sprintf("%x-%x-%x-%x-%x", p[0:4], p[4:6], p[6:8], p[8:10], p[10:16])
			case 0x10:
				total += len(p)
				if _, err := c.Write(append(h[:], p...)); err != nil {
					return
				}
			case 0x00:
				return
			}
		}
	}()
	t.Cleanup(func() { l.Close() })
	return "tcp://" + l.Addr().String(), ids, got
}

// TestStreamAudioSocket: the same route over Asterisk's AudioSocket: the
// bot gets the call's UUID, then 16-bit PCM frames, and its echo is
// played; the caller's hangup sends AudioSocket's hangup.
func TestStreamAudioSocket(t *testing.T) {
	url, ids, got := audioSocketBot(t)
	d := streamDaemon(t, nil)
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "as", "phone_number": "+14155550189",
		"stream": map[string]any{"url": url, "protocol": "audiosocket"}}, 200)
	sc := pcmaCall("audiosocket", 200)
	sc.Play, sc.PauseMs = g711aPcap, 4000
	res := runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", sc), "14155550189")
	res.requireOK(t)
	var id string
	select {
	case id = <-ids:
	case <-time.After(5 * time.Second):
		t.Fatal("no UUID")
	}
	total := <-got
	t.Logf("the AudioSocket bot got %.1f s of audio", float64(total)/16000)
	require.GreaterOrEqual(t, total, 3*16000, "the caller's audio as 16-bit PCM")
	rec := endedRecord(t, d, id)
	require.Equal(t, "stream", rec["route"])
	require.GreaterOrEqual(t, rec["media"].(map[string]any)["first_audio_ms"], float64(0), "the bot's echo was played")
}
