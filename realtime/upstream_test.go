package realtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const keyEnv = "SWITCHBOARD_TEST_REALTIME_KEY"

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func openUpstream(t *testing.T, srv *realtimetest.Server, opts realtime.Options, cfg realtime.SessionConfig) (realtime.Session, *realtimetest.Conn) {
	t.Helper()
	opts.URL = srv.URL()
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = keyEnv
	}
	up, err := realtime.NewUpstream(opts)
	require.NoError(t, err)
	s, err := up.Open(ctxT(t, 5*time.Second), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c, err := srv.Accept(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	return s, c
}

// next returns the next event, failing the test on timeout or end.
func next(t *testing.T, s realtime.Session) realtime.Event {
	t.Helper()
	select {
	case e, ok := <-s.Events():
		require.True(t, ok, "events closed: %v", s.Err())
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return nil
	}
}

func nextOf(t *testing.T, s realtime.Session, typ string) realtime.Event {
	t.Helper()
	for {
		if e := next(t, s); e.EventType() == typ {
			return e
		}
	}
}

func TestUpstreamHandshakeAuthAndSessionUpdate(t *testing.T) {
	t.Setenv(keyEnv, "sk-test")
	srv := realtimetest.NewServer(t, realtimetest.Options{APIKey: "sk-test"})
	cfg := realtime.SessionConfig{Instructions: ptr("Be brief."), Audio: &realtime.AudioConfig{
		Input: &realtime.AudioInput{Format: &realtime.AudioFormat{Type: realtime.FormatPCMU}}}}
	s, c := openUpstream(t, srv, realtime.Options{Model: "svc-voice-latest"}, cfg)

	require.Equal(t, "Bearer sk-test", c.Header.Get("Authorization"))
	require.Equal(t, "svc-voice-latest", c.Query.Get("model"))
	// The provider's session.updated is folded into its session.created,
	// which then reports the session in force.
	created, ok := next(t, s).(*realtime.SessionCreated)
	require.True(t, ok)
	require.Equal(t, "Be brief.", *created.Session.Instructions)
	require.Equal(t, realtime.FormatPCMU, created.Session.InputFormat().Type)
	require.Equal(t, realtime.TypeConversationCreated, next(t, s).EventType())
	sess := c.Session()
	require.Equal(t, "Be brief.", *sess.Instructions)
	require.Equal(t, realtime.FormatPCMU, sess.InputFormat().Type)

	// Unknown server events are passed through untouched.
	raw := `{"type":"rate_limits.updated","event_id":"e9","rate_limits":[]}`
	require.NoError(t, c.SendRaw([]byte(raw)))
	u, ok := next(t, s).(*realtime.Unknown)
	require.True(t, ok)
	require.Equal(t, raw, string(u.Raw))

	// G.711 goes through untouched.
	g711 := []byte{0xff, 0x7f, 0x00, 0x80}
	require.NoError(t, s.AppendAudio(g711))
	require.NoError(t, s.Send(ctxT(t, time.Second), &realtime.InputAudioBufferCommit{}))
	_, err := c.Expect(ctxT(t, 5*time.Second), realtime.TypeInputAudioBufferCommit)
	require.NoError(t, err)
	got := c.Received()
	var appended []byte
	for _, e := range got {
		if a, ok := e.(*realtime.InputAudioBufferAppend); ok {
			appended = append(appended, a.Audio...)
		}
	}
	require.Equal(t, g711, appended)
	require.Equal(t, realtime.TypeInputAudioBufferAppend, got[len(got)-2].EventType(), "append stays ordered before commit")

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "idempotent")
	require.ErrorIs(t, s.Err(), realtime.ErrClosed)
	require.ErrorIs(t, s.Send(context.Background(), &realtime.ResponseCreate{}), realtime.ErrClosed)
	require.ErrorIs(t, s.AppendAudio([]byte{1}), realtime.ErrClosed)
}

func TestUpstreamRefusedHandshakes(t *testing.T) {
	t.Setenv(keyEnv, "sk-wrong")
	for _, tc := range []struct {
		name   string
		opts   realtimetest.Options
		status int
	}{
		{"bad key", realtimetest.Options{APIKey: "sk-right"}, http.StatusUnauthorized},
		{"overloaded", realtimetest.Options{RefuseStatus: http.StatusServiceUnavailable}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := realtimetest.NewServer(t, tc.opts)
			up, err := realtime.NewUpstream(realtime.Options{URL: srv.URL(), APIKeyEnv: keyEnv})
			require.NoError(t, err)
			_, err = up.Open(ctxT(t, 5*time.Second), realtime.SessionConfig{})
			var he *realtime.HandshakeError
			require.ErrorAs(t, err, &he)
			require.Equal(t, tc.status, he.StatusCode)
		})
	}
}

func TestUpstreamOptionErrors(t *testing.T) {
	_, err := realtime.NewUpstream(realtime.Options{})
	require.Error(t, err)
	_, err = realtime.NewUpstream(realtime.Options{URL: "https://example.invalid/v1/realtime"})
	require.Error(t, err)
	up, err := realtime.NewUpstream(realtime.Options{URL: "wss://127.0.0.1:1/v1/realtime?model=a", Model: "b", APIKeyEnv: "SWITCHBOARD_TEST_UNSET_KEY"})
	require.NoError(t, err)
	require.Equal(t, "wss://127.0.0.1:1/v1/realtime?model=a", up.URL(), "an explicit model in the URL wins")
	_, err = up.Open(context.Background(), realtime.SessionConfig{})
	require.ErrorContains(t, err, "SWITCHBOARD_TEST_UNSET_KEY")
}

func TestUpstreamConnectTimeout(t *testing.T) {
	t.Setenv(keyEnv, "k")
	srv := realtimetest.NewServer(t, realtimetest.Options{AcceptDelay: 3 * time.Second})
	up, err := realtime.NewUpstream(realtime.Options{URL: srv.URL(), APIKeyEnv: keyEnv, ConnectTimeout: 150 * time.Millisecond})
	require.NoError(t, err)
	_, err = up.Open(context.Background(), realtime.SessionConfig{})
	require.Error(t, err)
	var he *realtime.HandshakeError
	require.False(t, errors.As(err, &he))
	srv.Close()
}

func TestUpstreamPings(t *testing.T) {
	t.Setenv(keyEnv, "k")
	opts := realtime.Options{PingInterval: 40 * time.Millisecond, PongTimeout: 80 * time.Millisecond}
	t.Run("answered pings keep a quiet session open", func(t *testing.T) {
		srv := realtimetest.NewServer(t, realtimetest.Options{})
		s, _ := openUpstream(t, srv, opts, realtime.SessionConfig{})
		select {
		case <-s.Done():
			t.Fatalf("session ended: %v", s.Err())
		case <-time.After(600 * time.Millisecond): // 5x the pong window with no traffic but pongs
		}
	})
	t.Run("no pong ends the session", func(t *testing.T) {
		srv := realtimetest.NewServer(t, realtimetest.Options{NoPong: true})
		s, _ := openUpstream(t, srv, opts, realtime.SessionConfig{})
		select {
		case <-s.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("session did not notice the missing pongs")
		}
		require.ErrorIs(t, s.Err(), realtime.ErrDisconnected)
		require.ErrorIs(t, s.Err(), realtime.ErrPongTimeout)
	})
}

func TestUpstreamStalledServerNeverBlocksAppendAudio(t *testing.T) {
	t.Setenv(keyEnv, "k")
	srv := realtimetest.NewServer(t, realtimetest.Options{})
	s, c := openUpstream(t, srv, realtime.Options{AudioQueue: 8, WriteTimeout: 300 * time.Millisecond, PingInterval: time.Hour}, realtime.SessionConfig{})
	c.StopReading()
	frame := make([]byte, 64<<10) // big frames fill the socket buffers quickly
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 600 { // ~38 MB: far more than loopback buffers hold
			_ = s.AppendAudio(frame)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("AppendAudio blocked on a stalled server")
	}
	require.Positive(t, s.Stats().AudioDropped, "a stalled writer drops the oldest audio")
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("write timeout did not end the session")
	}
	require.ErrorIs(t, s.Err(), realtime.ErrDisconnected)
	c.ResumeReading()
}

func TestUpstreamDisconnectMidResponse(t *testing.T) {
	t.Setenv(keyEnv, "k")
	srv := realtimetest.NewServer(t, realtimetest.Options{})
	s, c := openUpstream(t, srv, realtime.Options{}, realtime.SessionConfig{})
	go func() {
		_, _ = c.StreamResponse(context.Background(), realtimetest.Response{Audio: 5 * time.Second, DropAfter: 300 * time.Millisecond})
	}()
	deltas := 0
	for e := range s.Events() {
		if _, ok := e.(*realtime.ResponseOutputAudioDelta); ok {
			deltas++
		}
		require.NotEqual(t, realtime.TypeResponseDone, e.EventType())
	}
	require.Equal(t, 3, deltas)
	require.ErrorIs(t, s.Err(), realtime.ErrDisconnected)
	require.NotErrorIs(t, s.Err(), realtime.ErrClosed)
}

func TestUpstreamLongResponseCancelAndFunctionCall(t *testing.T) {
	t.Setenv(keyEnv, "k")
	srv := realtimetest.NewServer(t, realtimetest.Options{})
	s, c := openUpstream(t, srv, realtime.Options{}, realtime.SessionConfig{})

	resCh := make(chan realtimetest.Result, 1)
	go func() {
		r, _ := c.StreamResponse(context.Background(), realtimetest.Response{Audio: 10 * time.Second, Paced: true, Transcript: "long"})
		resCh <- r
	}()
	d := nextOf(t, s, realtime.TypeResponseOutputAudioDelta).(*realtime.ResponseOutputAudioDelta)
	require.Len(t, d.Delta, 4800, "100 ms of 24 kHz PCM16")
	require.NoError(t, s.Send(ctxT(t, time.Second), &realtime.ResponseCancel{}))
	done := nextOf(t, s, realtime.TypeResponseDone).(*realtime.ResponseDone)
	require.Equal(t, realtime.StatusCancelled, done.Response.Status)
	r := <-resCh
	require.True(t, r.Cancelled)
	require.Less(t, r.Sent, 10*time.Second)

	callID, err := c.FunctionCall("transfer_call", `{"to":"sales"}`)
	require.NoError(t, err)
	args := nextOf(t, s, realtime.TypeResponseFunctionCallArgumentsDone).(*realtime.ResponseFunctionCallArgumentsDone)
	require.Equal(t, callID, args.CallID)
	require.Equal(t, `{"to":"sales"}`, args.Arguments)
	require.NoError(t, s.Send(ctxT(t, time.Second), &realtime.ConversationItemCreate{Item: realtime.FunctionCallOutput(callID, `{"ok":true}`)}))
	out, err := c.AwaitFunctionOutput(ctxT(t, 5*time.Second), callID)
	require.NoError(t, err)
	require.Equal(t, `{"ok":true}`, out)

	require.NoError(t, c.SendError("bad_thing", "something went wrong", "evt_1"))
	ev := nextOf(t, s, realtime.TypeError).(*realtime.ErrorEvent)
	require.Equal(t, "bad_thing", ev.Error.Code)
	require.Nil(t, s.Err(), "an error event leaves the session open")
}

func ptr[T any](v T) *T { return &v }

// TestUpstreamForwardsModelAndReasoning: the session's model (when
// upstream.model names none) and its reasoning effort reach the provider
// as the spec's query parameters and inside the session.update.
func TestUpstreamForwardsModelAndReasoning(t *testing.T) {
	t.Setenv(keyEnv, "sk-test")
	srv := realtimetest.NewServer(t, realtimetest.Options{APIKey: "sk-test"})
	cfg := realtime.SessionConfig{Model: "svc-voice-think-fast-1.0", Reasoning: &realtime.Reasoning{Effort: realtime.EffortNone}}
	s, c := openUpstream(t, srv, realtime.Options{}, cfg)
	require.Equal(t, "svc-voice-think-fast-1.0", c.Query.Get("model"))
	require.Equal(t, "none", c.Query.Get("reasoning.effort"))
	created := nextOf(t, s, realtime.TypeSessionCreated).(*realtime.SessionCreated)
	require.Equal(t, "none", created.Session.Reasoning.Effort)
	require.Equal(t, "none", c.Session().Reasoning.Effort)

	// upstream.model wins over the session's model.
	_, c = openUpstream(t, srv, realtime.Options{Model: "provider-model"}, cfg)
	require.Equal(t, "provider-model", c.Query.Get("model"))
}

// TestUpstreamSessionShape: the provider is sent the voice and the turn
// detection in the one placement it takes (upstream.session_fields),
// whichever placement the client used.
func TestUpstreamSessionShape(t *testing.T) {
	for _, tc := range []struct {
		shape realtime.SessionShape
		want  string
	}{
		{realtime.ShapeBoth, `{"type":"realtime","audio":{"input":{"turn_detection":null},"output":{"voice":"ara"}}}`}, // the default: nested
		{realtime.ShapeNested, `{"type":"realtime","audio":{"input":{"turn_detection":null},"output":{"voice":"ara"}}}`},
		{realtime.ShapeTopLevel, `{"type":"realtime","voice":"ara","turn_detection":null}`},
	} {
		got := make(chan []byte, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer ws.Close()
			_, msg, err := ws.ReadMessage()
			if err == nil {
				got <- msg
			}
			_, _, _ = ws.ReadMessage() // until the client goes
		}))
		var cfg realtime.SessionConfig
		require.NoError(t, json.Unmarshal([]byte(`{"voice":"ara","turn_detection":null}`), &cfg))
		up, err := realtime.NewUpstream(realtime.Options{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), SessionShape: tc.shape})
		require.NoError(t, err)
		s, err := up.Open(ctxT(t, 5*time.Second), cfg)
		require.NoError(t, err)
		select {
		case msg := <-got:
			var upd struct {
				Session json.RawMessage `json:"session"`
			}
			require.NoError(t, json.Unmarshal(msg, &upd))
			require.JSONEq(t, tc.want, string(upd.Session))
		case <-time.After(5 * time.Second):
			t.Fatal("no session.update")
		}
		require.NoError(t, s.Close())
		srv.Close()
	}
}
