package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
	"switchboard/realtime/realtimetest"
)

// headerCheck is a regexp a header of a request sipp receives must match
// (the scenario's ereg with check_it: sipp fails the call otherwise).
type headerCheck struct{ Header, Regexp, Var string }

// checks makes header checks from name, regexp pairs.
func checks(pairs ...string) []headerCheck {
	var out []headerCheck
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, headerCheck{Header: pairs[i], Regexp: pairs[i+1], Var: fmt.Sprintf("hdr%d", i/2)})
	}
	return out
}

// headersCaller is the data of testdata/sipp/headers_caller.xml.tmpl.
type headersCaller struct {
	CallerName string
	// Headers are extra INVITE header lines ("X-Account-Id: 42"); no
	// [ or ] (sipp keywords).
	Headers []string
	// Mode is "480", "bye" (hang up after PauseMs), "wait_bye" or "refer".
	Mode         string
	PauseMs      int
	ReferChecks  []headerCheck
	ByeReason    string
	ByeTimeoutMs int
}

// headersCallee is the data of testdata/sipp/headers_callee.xml.tmpl.
type headersCallee struct {
	InviteChecks []headerCheck
	Refer        bool
	ReferChecks  []headerCheck
	ByeReason    string
	ByeTimeoutMs int
}

// callWithHeaders has sipp call number on d with the caller scenario c.
func callWithHeaders(t *testing.T, d *apptest.Daemon, number string, c headersCaller) *sippRun {
	t.Helper()
	if c.ByeTimeoutMs == 0 {
		c.ByeTimeoutMs = 20000
	}
	return startSippScenario(t, "headers_caller.xml.tmpl", c, 40*time.Second, d.App.SIPAddr().String(), "-s", number,
		"-m", "1", "-l", "1", "-p", fmt.Sprint(freePort(t, "udp")))
}

// startHeadersCallee runs sipp as the callee c and returns its port.
func startHeadersCallee(t *testing.T, c headersCallee) (int, *sippRun) {
	t.Helper()
	if c.ByeTimeoutMs == 0 {
		c.ByeTimeoutMs = 30000
	}
	return startSippListener(t, "headers_callee.xml.tmpl", c, 40*time.Second, "-m", "1")
}

// headersKeyEnv holds the scripted upstream's key for these tests.
const (
	headersKeyEnv = "SWITCHBOARD_TEST_HEADERS_UPSTREAM_KEY"
	headersKey    = "sk-headers-test"
	// headersToolsSecret signs tool calls and context requests.
	headersToolsSecret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

var headersKeyOnce sync.Once

// headersEnv is a daemon whose agents speak to a scripted upstream.
type headersEnv struct {
	d  *apptest.Daemon
	up *realtimetest.Server
}

func newHeadersEnv(t *testing.T, env map[string]string) *headersEnv {
	t.Helper()
	headersKeyOnce.Do(func() { os.Setenv(headersKeyEnv, headersKey) })
	up := realtimetest.NewServer(t, realtimetest.Options{APIKey: headersKey})
	all := map[string]string{
		"SWITCHBOARD_UPSTREAM_URL":         up.URL(),
		"SWITCHBOARD_UPSTREAM_API_KEY_ENV": headersKeyEnv,
		"SWITCHBOARD_RTP_PORTS":            takePorts(t, 20).String(),
		"SWITCHBOARD_TOOLS_SECRET":         headersToolsSecret,
	}
	for k, v := range env {
		all[k] = v
	}
	return &headersEnv{d: apptest.Start(t, apptest.Config(t, t.TempDir(), all)), up: up}
}

// agent creates an agent with engine upstream and settings; it returns
// its id.
func (e *headersEnv) agent(t *testing.T, settings map[string]any) string {
	t.Helper()
	body := map[string]any{"name": "headers " + t.Name(), "engine": "upstream"}
	for k, v := range settings {
		body[k] = v
	}
	return e.d.JSON(t, "POST", "/v1/agents", e.d.OwnerKey, body, 200)["agent_id"].(string)
}

// number creates the number e164 with the body's fields.
func (e *headersEnv) number(t *testing.T, e164 string, fields map[string]any) {
	t.Helper()
	body := map[string]any{"origin": "byo_trunk", "name": "headers " + e164, "phone_number": e164}
	for k, v := range fields {
		body[k] = v
	}
	e.d.JSON(t, "POST", "/v2/phone-numbers", e.d.OwnerKey, body, 200)
}

// accept returns the upstream connection of the next call.
func (e *headersEnv) accept(t *testing.T) *realtimetest.Conn {
	t.Helper()
	c, err := e.up.Accept(ctxFor(t, 15*time.Second))
	require.NoError(t, err)
	return c
}

// instructions waits for the session's instructions (set by the
// session.update the appliance sends when it opens the session).
func instructions(t *testing.T, c *realtimetest.Conn) string {
	t.Helper()
	var got string
	require.Eventually(t, func() bool {
		s := c.Session()
		if s.Instructions == nil {
			return false
		}
		got = *s.Instructions
		return true
	}, 5*time.Second, 10*time.Millisecond)
	return got
}

// callTo waits for the call to number on d and returns it.
func callTo(t *testing.T, d *apptest.Daemon, number string) *call.Call {
	t.Helper()
	var found *call.Call
	require.Eventually(t, func() bool {
		for _, c := range d.App.Calls().List() {
			if c.Route().PhoneNumber == number {
				found = c
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no call to %s", number)
	return found
}

// signedReceiver is an HTTP endpoint on loopback that checks the
// Standard Webhooks signature of every POST (the tools secret) and hands
// the decoded body to answer.
type signedReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []map[string]any
}

func newSignedReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body map[string]any)) *signedReceiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(headersToolsSecret)
	require.NoError(t, err)
	s := &signedReceiver{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if err := wh.Verify(raw, r.Header); err != nil {
			t.Errorf("signature of %s: %v", r.URL.Path, err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("body of %s: %v", r.URL.Path, err)
		}
		s.mu.Lock()
		s.got = append(s.got, body)
		s.mu.Unlock()
		answer(w, r, body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// requests are the bodies received so far.
func (s *signedReceiver) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.got...)
}

// sipHeaderValue is the value of the header name in a sip_headers list.
func sipHeaderValue(list any, name string) string {
	items, _ := list.([]any)
	for _, x := range items {
		m, _ := x.(map[string]any)
		if m["name"] == name {
			s, _ := m["value"].(string)
			return s
		}
	}
	return ""
}
