package conversation_test

// End-to-end tests of the agent flows the appliance voices itself (the
// comfort prompt, the transfer announcement, the cached greeting) and of
// the STT transcript fallback, on the harness of harness_e2e_test.go.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
)

// burst is a run of heard frames at the caller (gaps shorter than
// burstGap merged: the pauses between words).
type burst struct {
	from, to time.Time
	frames   int
	peak     int
}

const burstGap = 300 * time.Millisecond

// bursts returns the runs of audio the caller heard in (from, to].
func (c *caller) bursts(from, to time.Time) []burst {
	var out []burst
	for _, f := range c.frames() {
		if !f.at.After(from) || f.at.After(to) || !f.heard() {
			continue
		}
		if n := len(out); n > 0 && f.at.Sub(out[n-1].to) < burstGap {
			b := &out[n-1]
			b.to, b.frames, b.peak = f.at, b.frames+1, max(b.peak, f.peak)
			continue
		}
		out = append(out, burst{from: f.at, to: f.at, frames: 1, peak: f.peak})
	}
	return out
}

func (b burst) String() string {
	return fmt.Sprintf("{%d ms, peak %d}", 20*b.frames, b.peak)
}

// TestAgentComfortPrompt: while a custom tool runs past the comfort delay
// (1 s), the caller first hears the spoken comfort prompt (speech: a long
// loud burst), then the soft tone pattern (200 ms bursts of a quiet tone,
// one a second). With comfort_prompt "" the tone pattern comes alone.
func TestAgentComfortPrompt(t *testing.T) {
	t.Parallel()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3500 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"found"}`)
	}))
	t.Cleanup(slow.Close)
	e := startUpstream(t, realtimetest.Options{}, nil)
	tools := []map[string]any{{"name": "slow_lookup", "url": slow.URL, "timeout_ms": 6000}}
	for _, tc := range []struct {
		name   string
		prompt any // nil: the default
	}{{"default prompt", nil}, {"no prompt", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			settings := map[string]any{"tools": tools}
			if tc.prompt != nil {
				settings["comfort_prompt"] = tc.prompt
			}
			rendered := e.rendered()
			c, conn := e.callNoGreeting(t, settings)
			ctx := ctxFor(t, 10*time.Second)
			if tc.prompt == nil { // the comfort prompt is rendered
				e.waitRendered(t, rendered+1)
			}
			start := time.Now()
			callID, err := conn.FunctionCall("slow_lookup", `{}`)
			require.NoError(t, err)
			_, err = conn.AwaitFunctionOutput(ctx, callID)
			require.NoError(t, err)
			end := time.Now()
			bs := c.bursts(start, end)
			t.Logf("heard while the tool ran (%v): %v", end.Sub(start).Round(time.Millisecond), bs)
			require.GreaterOrEqual(t, len(bs), 2, "nothing filled the wait")
			require.GreaterOrEqual(t, bs[0].from.Sub(start), 900*time.Millisecond, "comfort before the delay")
			require.Less(t, bs[0].from.Sub(start), 1300*time.Millisecond, "comfort long after the delay")
			tones := bs[1:]
			if tc.prompt == nil {
				require.GreaterOrEqual(t, bs[0].frames, 30, "the comfort prompt is a spoken sentence")
				require.Greater(t, bs[0].peak, 3000, "the comfort prompt is speech, not the soft tone")
			} else {
				tones = bs
			}
			complete := 0
			for i, b := range tones {
				if b.to.After(end.Add(-300 * time.Millisecond)) {
					continue // cut by the result
				}
				complete++
				require.InDelta(t, 10, b.frames, 1, "tone burst %d", i)
				require.Less(t, b.peak, 2000, "tone burst %d is the soft tone", i)
				if i > 0 {
					require.InDelta(t, time.Second, b.from.Sub(tones[i-1].from), float64(100*time.Millisecond), "tone period")
				}
			}
			require.GreaterOrEqual(t, complete, 1, "no tone after the prompt")
			rec := callRecordOf(t, e, c)
			saidPrompt := false
			for _, l := range rec.Transcript {
				saidPrompt = saidPrompt || (l.Role == "assistant" && l.Text == "One moment, please.")
			}
			require.Equal(t, tc.prompt == nil, saidPrompt, "transcript %v", rec.Transcript)
		})
	}
}

// TestAgentTransferAnnouncement: after the model's sentence, transfer_call
// first plays the transfer announcement from the cache, and the REFER
// reaches the caller only once it played out.
func TestAgentTransferAnnouncement(t *testing.T) {
	t.Parallel()
	e := startUpstream(t, realtimetest.Options{}, nil)
	rendered := e.rendered()
	c, conn := e.callNoGreeting(t, map[string]any{"transfer_targets": []map[string]any{{"name": "sales", "uri": "sip:sales@127.0.0.1"}}})
	ctx := ctxFor(t, 10*time.Second)
	e.waitRendered(t, rendered+2) // the comfort prompt and the announcement
	start := time.Now()
	_, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: 600 * time.Millisecond, Transcript: "Let me connect you."})
	require.NoError(t, err)
	_, err = conn.FunctionCall("transfer_call", `{"target":"sales"}`)
	require.NoError(t, err)
	reason := c.waitEnded(10 * time.Second)
	require.Contains(t, reason, "transferred")
	require.Equal(t, []string{"sip:sales@127.0.0.1"}, c.referred())
	refer, _ := c.event("refer_received")
	bs := c.bursts(start, refer.Time)
	heard := c.heardMs(start, refer.Time)
	t.Logf("before the REFER the caller heard %d ms: %v", heard, bs)
	require.GreaterOrEqual(t, heard, 600+1000, "the announcement did not play before the REFER")
	last := bs[len(bs)-1]
	require.True(t, last.to.Before(refer.Time))
	require.Less(t, refer.Time.Sub(last.to), time.Second, "the REFER waited long after the announcement")
	require.Zero(t, c.heardMs(refer.Time, time.Now()), "audio after the REFER")
	want := []string{"assistant: Let me connect you.", "assistant: Please hold while I transfer your call."}
	var lines []string
	require.Eventually(t, func() bool {
		lines = nil
		for _, l := range callRecordOf(t, e, c).Transcript {
			lines = append(lines, l.Role+": "+l.Text)
		}
		return len(lines) == len(want)
	}, 5*time.Second, 20*time.Millisecond, "transcript %v", lines)
	require.Equal(t, want, lines)
}

// fakeSTT is a provider's POST /v1/stt on loopback: multipart in (file
// last), a JSON transcript out.
type fakeSTT struct {
	*httptest.Server
	text string

	mu   sync.Mutex
	reqs []sttRequest
}

type sttRequest struct {
	at     time.Time
	fields map[string]string
	bytes  int
	rms    float64
}

func newFakeSTT(t *testing.T, text string) *fakeSTT {
	f := &fakeSTT{text: text}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/stt" {
			http.NotFound(w, r)
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := sttRequest{at: time.Now(), fields: map[string]string{}}
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			b, _ := io.ReadAll(p)
			if p.FormName() != "file" {
				req.fields[p.FormName()] = string(b)
				continue
			}
			req.bytes = len(b)
			var sum float64
			for i := 0; i+1 < len(b); i += 2 {
				v := float64(int16(binary.LittleEndian.Uint16(b[i:])))
				sum += v * v
			}
			if n := len(b) / 2; n > 0 {
				req.rms = math.Sqrt(sum / float64(n))
			}
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"text": f.text, "language": "en", "duration": float64(req.bytes) / 48000})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSTT) requests() []sttRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sttRequest(nil), f.reqs...)
}

// rendered counts the prompts the daemon's calls rendered so far.
func (e *upstreamEnv) rendered() int {
	return strings.Count(e.d.Logs.String(), `"message":"prompt rendered"`)
}

// waitRendered waits until the daemon's calls rendered n prompts in all.
func (e *upstreamEnv) waitRendered(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return e.rendered() >= n }, 10*time.Second, 5*time.Millisecond, "the call's prompts are rendered")
}

// callerTone is d of a 440 Hz tone at 8 kHz, loud enough for any VAD.
func callerTone(d time.Duration) []int16 {
	n := int(d / time.Millisecond * 8)
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/8000))
	}
	return out
}

// speakTurn has the caller speak for d while the provider reports the
// turn (speech_started, then speech_stopped once the audio arrived: the
// provider got d and the jitter buffer's delay more of the caller's
// audio); it returns when speech_stopped was sent.
func speakTurn(t *testing.T, c *caller, conn *realtimetest.Conn, item string, d time.Duration) time.Time {
	t.Helper()
	require.NoError(t, conn.Send(&realtime.InputAudioBufferSpeechStarted{ItemID: item}))
	before := appended(conn)
	c.say(callerTone(d))
	want := before + audioBytes(conn, d+150*time.Millisecond)
	require.Eventually(t, func() bool { return appended(conn) >= want }, d+5*time.Second, 5*time.Millisecond,
		"the caller's turn reaches the provider")
	require.NoError(t, conn.Send(&realtime.InputAudioBufferSpeechStopped{ItemID: item}))
	return time.Now()
}

// appended is how many bytes of the caller's audio the provider got
// (input_audio_buffer.append).
func appended(conn *realtimetest.Conn) int {
	n := 0
	for _, e := range conn.Received() {
		if a, ok := e.(*realtime.InputAudioBufferAppend); ok {
			n += len(a.Audio)
		}
	}
	return n
}

// audioBytes is d of audio in the session's input format.
func audioBytes(conn *realtimetest.Conn, d time.Duration) int {
	perSecond := 8000 // G.711
	if s := conn.Session(); s.Audio != nil && s.Audio.Input != nil && s.Audio.Input.Format != nil && s.Audio.Input.Format.Type == realtime.FormatPCM {
		perSecond = 2 * s.Audio.Input.Format.Rate
	}
	return int(int64(perSecond) * int64(d) / int64(time.Second))
}

// audioFlows waits until the caller's RTP reaches the provider's session:
// 100 ms of its audio came in input_audio_buffer.append events.
func audioFlows(t *testing.T, conn *realtimetest.Conn) {
	t.Helper()
	want := audioBytes(conn, 100*time.Millisecond)
	require.Eventually(t, func() bool { return appended(conn) >= want }, 5*time.Second, 5*time.Millisecond,
		"the caller's audio reaches the provider")
}

// TestAgentSTTFallback: with the STT engine configured (an upstream on
// loopback), a caller turn the provider does not transcribe goes to POST
// /v1/stt (raw PCM at 8 kHz, the turn's audio) and its text becomes the
// user line of the call record, beside the assistant's. When the session
// transcribes and the provider's transcript comes, STT is not called; when
// it does not come within the wait, STT is.
func TestAgentSTTFallback(t *testing.T) {
	t.Parallel()
	stt := newFakeSTT(t, "I would like to check my order")
	e := startUpstream(t, realtimetest.Options{}, map[string]string{
		"SWITCHBOARD_STT_ENGINE": "upstream", "SWITCHBOARD_SPEECH_UPSTREAM_URL": stt.URL})

	t.Run("session without transcription", func(t *testing.T) {
		c, conn := e.callNoGreeting(t, nil)
		ctx := ctxFor(t, 10*time.Second)
		audioFlows(t, conn)
		before := len(stt.requests())
		stopped := speakTurn(t, c, conn, "item_u1", time.Second)
		require.Eventually(t, func() bool { return len(stt.requests()) > before }, 5*time.Second, 10*time.Millisecond)
		req := stt.requests()[before]
		t.Logf("STT request %v after speech_stopped: %d bytes, rms %.0f, fields %v", req.at.Sub(stopped).Round(time.Millisecond), req.bytes, req.rms, req.fields)
		require.Equal(t, "pcm", req.fields["audio_format"])
		require.Equal(t, "8000", req.fields["sample_rate"], "the turn as the telephone had it (kept as 8 kHz G.711)")
		// The second of speech plus at most the pre-roll and the slack.
		require.GreaterOrEqual(t, req.bytes, 16000*9/10)
		require.LessOrEqual(t, req.bytes, 16000*2)
		require.Greater(t, req.rms, 1000.0, "the caller's voice is not in the audio")
		require.Eventually(t, func() bool { return len(callRecordOf(t, e, c).Transcript) == 1 }, 5*time.Second, 20*time.Millisecond)
		_, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: 300 * time.Millisecond, Transcript: "Your order has shipped."})
		require.NoError(t, err)
		var rec callRecord
		require.Eventually(t, func() bool {
			rec = callRecordOf(t, e, c)
			return len(rec.Transcript) == 2
		}, 5*time.Second, 20*time.Millisecond)
		require.Equal(t, "user", rec.Transcript[0].Role)
		require.Equal(t, "I would like to check my order", rec.Transcript[0].Text)
		require.Equal(t, "assistant", rec.Transcript[1].Role)
		require.Equal(t, "Your order has shipped.", rec.Transcript[1].Text)
	})

	t.Run("session with transcription", func(t *testing.T) {
		c, conn := e.callNoGreeting(t, nil)
		audioFlows(t, conn)
		sess := conn.Session()
		require.NotNil(t, sess.Audio)
		sess.Audio.Input.Transcription = realtime.Some(realtime.Transcription{Model: "whisper-1"})
		require.NoError(t, conn.Send(&realtime.SessionUpdated{Session: sess}))
		before := len(stt.requests())
		speakTurn(t, c, conn, "item_p1", 500*time.Millisecond)
		require.NoError(t, conn.Send(&realtime.InputAudioTranscriptionCompleted{ItemID: "item_p1", Transcript: "Hello there."}))
		stopped := speakTurn(t, c, conn, "item_p2", 500*time.Millisecond)
		// The first turn was due 2 s after its speech_stopped, the second
		// 2 s after its own: exactly one request, for the second.
		require.Eventually(t, func() bool { return len(stt.requests()) > before }, 5*time.Second, 10*time.Millisecond)
		after := stt.requests()[before].at.Sub(stopped)
		t.Logf("STT request %v after the untranscribed turn's speech_stopped", after.Round(time.Millisecond))
		require.GreaterOrEqual(t, after, 1900*time.Millisecond, "STT asked before the provider's wait")
		// An STT request that should not come: the appliance's real
		// clock runs a while past the first turn's wait.
		time.Sleep(500 * time.Millisecond)
		require.Len(t, stt.requests(), before+1, "STT called for a turn the provider transcribed")
		var rec callRecord
		require.Eventually(t, func() bool {
			rec = callRecordOf(t, e, c)
			return len(rec.Transcript) == 2
		}, 5*time.Second, 20*time.Millisecond)
		require.Equal(t, []transcriptLine{{Role: "user", Text: "Hello there."}, {Role: "user", Text: "I would like to check my order"}}, rec.Transcript)
	})
}

// callRecord is the part of GET /v1/calls/{id} these tests read.
type callRecord struct {
	CallID     string           `json:"call_id"`
	SIPCallID  string           `json:"sip_call_id"`
	Transcript []transcriptLine `json:"transcript"`
}

type transcriptLine struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// callRecordOf finds the caller's call in GET /v1/calls and reads it with
// GET /v1/calls/{id}.
func callRecordOf(t *testing.T, e *upstreamEnv, c *caller) callRecord {
	t.Helper()
	st, _, raw := e.d.Do(t, "GET", "/v1/calls", e.d.OwnerKey, nil)
	require.Equal(t, 200, st, "%s", raw)
	var list struct {
		Calls []callRecord `json:"calls"`
	}
	require.NoError(t, json.Unmarshal(raw, &list))
	for _, r := range list.Calls {
		if r.SIPCallID == c.call.SIPCallID() {
			st, _, raw := e.d.Do(t, "GET", "/v1/calls/"+r.CallID, e.d.OwnerKey, nil)
			require.Equal(t, 200, st, "%s", raw)
			var rec callRecord
			require.NoError(t, json.Unmarshal(raw, &rec))
			return rec
		}
	}
	t.Fatalf("call %s not listed", c.call.SIPCallID())
	return callRecord{}
}

// TestAgentGreetingCache measures, from the RTP the caller receives, the
// time from the ACK to the greeting's first packet: with the greeting in
// the cache (rendered when the agent was saved) and uncached (the
// greeting changed in the store behind the API's back, so the call renders
// it with espeak-ng). For docs/benchmarks.md run with
// AGENT_GREETING_CALLS=40; only that each greeting arrives is asserted.
func TestAgentGreetingCache(t *testing.T) {
	n := 5
	if v, err := strconv.Atoi(os.Getenv("AGENT_GREETING_CALLS")); err == nil && v > n {
		n = v
	}
	e := startUpstream(t, realtimetest.Options{}, nil)
	ag := e.d.JSON(t, "POST", "/v1/agents", e.d.OwnerKey, map[string]any{"name": "Greeter", "instructions": "Test.",
		"engine": "upstream", "greeting": "Hello, you reached the test desk."}, 200)
	id := ag["agent_id"].(string)
	number := fmt.Sprintf("+1415555%04d", 2000+numberSeq.Add(1))
	e.d.JSON(t, "POST", "/v2/phone-numbers", e.d.OwnerKey, map[string]any{
		"origin": "byo_trunk", "name": "E2E " + number, "phone_number": number, "agent_id": id}, 200)
	require.Eventually(t, func() bool { // the warm-up render
		for _, line := range strings.Split(e.d.Logs.String(), "\n") {
			if strings.Contains(line, `"message":"prompt pre-rendered"`) && strings.Contains(line, `"text":"Hello, you reached the test desk."`) {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the greeting is pre-rendered")

	ackToGreeting := func() time.Duration {
		c, err := dial(t, e.d, number, callOptions{})
		require.NoError(t, err)
		ack, ok := c.event("ack_sent")
		require.True(t, ok)
		first := c.waitHeard(ack.Time, 10*time.Second)
		c.close()
		return first.at.Sub(ack.Time)
	}
	var cached, uncached dist
	for i := range n {
		cached = append(cached, ackToGreeting())
		// A new greeting text, written to the store directly: no OnSave,
		// so the call renders it.
		ctx := context.Background()
		rec, err := e.d.App.Store().Agents().Get(ctx, id)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(rec.Doc, &doc))
		doc["greeting"] = fmt.Sprintf("Hello, you reached the test desk, call %d.", i)
		rec.Doc, err = json.Marshal(doc)
		require.NoError(t, err)
		require.NoError(t, e.d.App.Store().Agents().Update(ctx, rec))
		uncached = append(uncached, ackToGreeting())
	}
	t.Logf("ACK -> first greeting packet, cached greeting: %v", cached)
	t.Logf("ACK -> first greeting packet, uncached (rendered by espeak-ng during the call): %v", uncached)
	require.Len(t, cached, n)
}
