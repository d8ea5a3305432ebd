package control

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/api/httpx"
	"switchboard/auth"
	"switchboard/call"
	"switchboard/conversation"
	"switchboard/media"
	"switchboard/realtime"
	"switchboard/realtime/echo"
	"switchboard/store"
	"switchboard/transfer"
)

// fakePhone is a call as the control endpoints see it.
type fakePhone struct {
	call.Parties // not used by the endpoints
	id           string
	state        call.State
	ctx          context.Context
	mu           sync.Mutex
	notes        []call.Note
}

func (p *fakePhone) ID() string                                                        { return p.id }
func (p *fakePhone) Route() call.Route                                                 { return call.Route{TeamID: "team-a"} }
func (p *fakePhone) Info() call.LegInfo                                                { return call.LegInfo{} }
func (p *fakePhone) MediaHealth() call.MediaHealth                                     { return call.MediaHealth{} }
func (p *fakePhone) Logger() zerolog.Logger                                            { return zerolog.Nop() }
func (p *fakePhone) Context() context.Context                                          { return p.ctx }
func (p *fakePhone) Snapshot() call.Snapshot                                           { return call.Snapshot{ID: p.id, State: p.state} }
func (p *fakePhone) Format() media.Format                                              { return media.PCM16(24000) }
func (p *fakePhone) Play(string, []byte)                                               {}
func (p *fakePhone) PlayPCM(string, []byte)                                            {}
func (p *fakePhone) Flush() (string, int)                                              { return "", 0 }
func (p *fakePhone) Pending() time.Duration                                            { return 0 }
func (p *fakePhone) Hangup(string, ...call.Header)                                     {}
func (p *fakePhone) SendDTMF(context.Context, string) error                            { return nil }
func (p *fakePhone) Transfer(context.Context, string, func(int), ...call.Header) error { return nil }
func (p *fakePhone) Note(n call.Note) {
	p.mu.Lock()
	p.notes = append(p.notes, n)
	p.mu.Unlock()
}

// fakeCall records what the endpoints asked of a call.
type fakeCall struct {
	phone     *fakePhone
	team      string
	referErr  error // nil: accepted; errHang: never answers
	dtmfErr   error
	streamErr error

	mu       sync.Mutex
	hangup   string
	digits   string
	target   string
	decision error // what Accept and Reject answer
	accepted *realtime.SessionConfig
	rejected int
	stream   call.StreamTarget
}

var errHang = errors.New("never answers")

func (c *fakeCall) Phone() call.Phone { return c.phone }
func (c *fakeCall) TeamID() string    { return c.team }
func (c *fakeCall) Attach() (*conversation.ControllerSession, error) {
	return nil, conversation.ErrNotControlled
}
func (c *fakeCall) Accept(cfg realtime.SessionConfig) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decision == nil {
		c.accepted = &cfg
	}
	return c.decision
}
func (c *fakeCall) Reject(status int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decision == nil {
		c.rejected = status
	}
	return c.decision
}
func (c *fakeCall) Hangup(reason string, _ ...call.Header) {
	c.mu.Lock()
	c.hangup = reason
	c.mu.Unlock()
}
func (c *fakeCall) SendDTMF(_ context.Context, digits string) error {
	c.mu.Lock()
	c.digits = digits
	c.mu.Unlock()
	return c.dtmfErr
}
func (c *fakeCall) Transfer(target string, _ ...call.Header) <-chan error {
	c.mu.Lock()
	c.target = target
	c.mu.Unlock()
	ch := make(chan error, 1)
	if c.referErr != errHang {
		ch <- c.referErr
	}
	return ch
}

func (c *fakeCall) SendToStream(_ context.Context, t call.StreamTarget) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stream = t
	return "MZ1", c.streamErr
}
func (c *fakeCall) Handoff(context.Context, transfer.Request) (*transfer.Transfer, error) {
	return nil, conversation.ErrNoTransfers
}
func (c *fakeCall) Hold(context.Context, string) error { return conversation.ErrNoTransfers }
func (c *fakeCall) Resume(context.Context) error       { return conversation.ErrNoTransfers }

type fakeCalls map[string]*fakeCall

func (f fakeCalls) Get(id string) (Call, bool) {
	c, ok := f[id]
	if !ok {
		return nil, false
	}
	return c, true
}

type noKeys struct{}

func (noKeys) Authorize(context.Context, string, httpx.Route) (*httpx.Principal, error) {
	return nil, httpx.Unauthorized("no key")
}

// fakeRecords holds stored calls: "over" ended, "open" still open, both
// of team-a.
type fakeRecords struct{}

func (fakeRecords) Get(_ context.Context, id string) (*store.Call, error) {
	switch id {
	case "over":
		return &store.Call{ID: id, TeamID: "team-a", EndTime: time.Now()}, nil
	case "open":
		return &store.Call{ID: id, TeamID: "team-a"}, nil
	}
	return nil, store.ErrNotFound
}

func newService(t *testing.T, calls fakeCalls) *Service {
	t.Helper()
	s, err := NewService(Options{Calls: calls, Records: fakeRecords{}, Keys: noKeys{}, Secrets: &auth.ClientSecrets{},
		Engines: map[string]realtime.Engine{"echo": echo.New(echo.Options{})}, TransferAcceptTimeout: 100 * time.Millisecond,
		HangupWait: 50 * time.Millisecond, Log: zerolog.Nop()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// do runs handler h for team's key on call id with body; it returns the
// HTTP status the API would answer and the error's param.
func do(t *testing.T, h func(http.ResponseWriter, *http.Request) error, team, id, body string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/realtime/calls/"+id+"/x", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.SetPathValue("call_id", id)
	r = r.WithContext(httpx.WithPrincipal(r.Context(), &httpx.Principal{TeamID: team}))
	w := httptest.NewRecorder()
	err := h(w, r)
	if err == nil {
		require.JSONEq(t, `{}`, w.Body.String())
		return w.Code, ""
	}
	var he *httpx.Error
	require.ErrorAs(t, err, &he)
	return he.Status, he.Param
}

func active(id string, referErr error) *fakeCall {
	return &fakeCall{phone: &fakePhone{id: id, state: call.StateActive, ctx: context.Background()}, team: "team-a", referErr: referErr}
}

// TestCallControlRefusals pins the statuses of the call-control endpoints
// for every kind of wrong call: unknown, another team's, ringing, ended.
func TestCallControlRefusals(t *testing.T) {
	ringing := active("ringing", nil)
	ringing.phone.state = call.StateRinging
	ended := active("ended", nil)
	ended.phone.state = call.StateEnded
	s := newService(t, fakeCalls{"live": active("live", nil), "ringing": ringing, "ended": ended})
	for _, tc := range []struct {
		name, team, id string
		status         int
	}{
		{"unknown", "team-a", "nope", 404},
		{"other team", "team-b", "live", 404},
		{"ringing", "team-a", "ringing", 409},
		{"ended", "team-a", "ended", 409},
		{"gone, record ended", "team-a", "over", 409},
		{"gone, record of another team", "team-b", "over", 404},
		{"gone, record open", "team-a", "open", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, h := range map[string]func(http.ResponseWriter, *http.Request) error{"refer": s.refer, "hangup": s.hangup, "dtmf": s.dtmf} {
				body := map[string]string{"refer": `{"target_uri":"tel:+14155550100"}`, "hangup": `{}`, "dtmf": `{"digits":"12#"}`}[name]
				status, _ := do(t, h, tc.team, tc.id, body)
				require.Equal(t, tc.status, status, name)
			}
		})
	}
}

// TestRefer: a bad target is 400 before the call is looked at; an
// accepted REFER is 200, a refused one 409, one never answered 504.
func TestRefer(t *testing.T) {
	ok, refused, silent := active("ok", nil), active("refused", errors.New("603 Decline")), active("silent", errHang)
	s := newService(t, fakeCalls{"ok": ok, "refused": refused, "silent": silent})
	status, param := do(t, s.refer, "team-a", "ok", `{"target_uri":"mailto:x@y"}`)
	require.Equal(t, 400, status)
	require.Equal(t, "target_uri", param)
	require.Empty(t, ok.target)

	status, _ = do(t, s.refer, "team-a", "ok", `{"target_uri":"sip:desk@pbx.example.com"}`)
	require.Equal(t, 200, status)
	require.Equal(t, "sip:desk@pbx.example.com", ok.target)

	status, param = do(t, s.refer, "team-a", "refused", `{"target_uri":"tel:+14155550100"}`)
	require.Equal(t, 409, status)
	require.Equal(t, "target_uri", param)

	status, _ = do(t, s.refer, "team-a", "silent", `{"target_uri":"tel:+14155550100"}`)
	require.Equal(t, 504, status)
}

// TestHangupAndDTMF: hangup notes the request and ends the call with the
// API's reason; dtmf checks the digits before the call, and a call that
// stopped being active in between is 409.
func TestHangupAndDTMF(t *testing.T) {
	c, gone := active("c", nil), active("gone", nil)
	gone.dtmfErr = call.ErrNotActive
	s := newService(t, fakeCalls{"c": c, "gone": gone})

	status, _ := do(t, s.hangup, "team-a", "c", `{}`)
	require.Equal(t, 200, status)
	require.Equal(t, hangupReason, c.hangup)
	require.Len(t, c.phone.notes, 1)
	require.Equal(t, call.NoteEvent, c.phone.notes[0].Kind)

	for _, bad := range []string{`{"digits":""}`, `{"digits":"12x"}`, `{"digits":"` + strings.Repeat("1", 65) + `"}`, `{"digits":1}`} {
		status, _ = do(t, s.dtmf, "team-a", "c", bad)
		require.Equal(t, 400, status, bad)
	}
	require.Empty(t, c.digits)
	status, _ = do(t, s.dtmf, "team-a", "c", `{"digits":"*1#"}`)
	require.Equal(t, 200, status)
	require.Equal(t, "*1#", c.digits)
	status, param := do(t, s.dtmf, "team-a", "gone", `{"digits":"1"}`)
	require.Equal(t, 409, status)
	require.Equal(t, "call_id", param)
}
