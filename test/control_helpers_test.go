package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// hookEvent is one POST the test receiver accepted.
type hookEvent struct {
	ID, Type string
	Data     map[string]any
	Header   http.Header
	At       time.Time
}

// hookReceiver is a webhook endpoint that verifies every POST with the
// Standard Webhooks library and refuses the first failFirst attempts of
// each event with 503.
type hookReceiver struct {
	t         *testing.T
	srv       *httptest.Server
	secret    atomic.Value // string
	failFirst int
	onEvent   func(ev hookEvent)

	mu       sync.Mutex
	attempts map[string]int
	events   chan hookEvent
}

func newHookReceiver(t *testing.T, failFirst int) *hookReceiver {
	h := &hookReceiver{t: t, failFirst: failFirst, attempts: map[string]int{}, events: make(chan hookEvent, 256)}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	secret, _ := h.secret.Load().(string)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	if err := wh.Verify(body, r.Header); err != nil {
		h.t.Errorf("webhook signature: %v", err)
		http.Error(w, "bad signature", 400)
		return
	}
	var ev struct {
		ID     string         `json:"id"`
		Object string         `json:"object"`
		Type   string         `json:"type"`
		Data   map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.Object != "event" {
		h.t.Errorf("webhook body %s: %v", body, err)
	}
	h.mu.Lock()
	h.attempts[ev.ID]++
	n := h.attempts[ev.ID]
	h.mu.Unlock()
	he := hookEvent{ID: ev.ID, Type: ev.Type, Data: ev.Data, Header: r.Header.Clone(), At: at}
	if h.onEvent != nil {
		h.onEvent(he)
	}
	if n <= h.failFirst {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	h.events <- he
	w.WriteHeader(http.StatusNoContent)
}

// next waits for the next accepted event of type typ (others are skipped).
func (h *hookReceiver) next(t *testing.T, typ string, within time.Duration) hookEvent {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-h.events:
			if ev.Type == typ {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s webhook within %s", typ, within)
		}
	}
}

// controlDaemon starts an appliance with the control settings of env
// and a webhook-routed number whose webhook is h.
func controlDaemon(t *testing.T, env map[string]string, h *hookReceiver, number string) *apptest.Daemon {
	t.Helper()
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), withOwnRTP(t, withDrain(env))))
	status, _, raw := d.Do(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{
		"origin": "byo_trunk", "name": "hook", "phone_number": number,
		"webhook": map[string]any{"url": h.srv.URL + "/hook", "auth_token": "receiver-token"},
	})
	require.Less(t, status, 300, "create number: %s", raw)
	var res struct {
		Webhook struct {
			Secret string `json:"dispatch_signing_secret"`
		} `json:"webhook"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	require.NotEmpty(t, res.Webhook.Secret)
	h.secret.Store(res.Webhook.Secret)
	return d
}

// sippControl is the data of testdata/sipp/control.xml.tmpl.
type sippControl struct {
	Mode         string // "480", "refer" or "" (answered; ends with ByeReason)
	Reject       string // when set: the final status expected instead of 200 ("486")
	RejectReason string // its reason phrase ("Busy Here")
	Audio        bool
	ReferTo      string
	// ReferRefuse refuses the REFER with this status line ("501 Not
	// Implemented"); NotifyStatus "" accepts it and never NOTIFYs.
	ReferRefuse  string
	NotifyStatus string
	ByeReason    string
}

// startSipp runs the control scenario against the daemon: calls calls,
// at rate per second.
func startSipp(t *testing.T, d *apptest.Daemon, number string, sc sippControl, calls, rate int) *sippRun {
	t.Helper()
	return startSippAt(t, d.App.SIPAddr().String(), number, sc, calls, rate)
}

// startSippAt runs the control scenario against the SIP address target.
func startSippAt(t *testing.T, target, number string, sc sippControl, calls, rate int) *sippRun {
	t.Helper()
	return startSippScenario(t, "control.xml.tmpl", sc, 40*time.Second, target, "-s", number,
		"-m", fmt.Sprint(calls), "-l", fmt.Sprint(calls), "-r", fmt.Sprint(rate), "-p", fmt.Sprint(freePort(t, "udp")))
}

// wsURL is the daemon's /v1/realtime address with query q.
func wsURL(d *apptest.Daemon, q string) string {
	return "ws" + strings.TrimPrefix(d.URL, "http") + "/v1/realtime" + q
}

// controller is a WebSocket client of /v1/realtime.
type controller struct {
	conn    *websocket.Conn
	events  chan map[string]any
	closed  chan struct{}
	close   *websocket.CloseError
	mu      sync.Mutex
	types   []string
	pending []map[string]any // read by next, test goroutine only
}

// dial opens /v1/realtime; on a refused upgrade it returns the status and
// body.
func dialController(t *testing.T, url string, h http.Header) (*controller, int, []byte) {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		require.NotNil(t, resp, "dial: %v", err)
		body, _ := io.ReadAll(resp.Body)
		return nil, resp.StatusCode, body
	}
	c := &controller{conn: conn, events: make(chan map[string]any, 4096), closed: make(chan struct{})}
	go func() {
		defer close(c.closed)
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				if ce, ok := err.(*websocket.CloseError); ok {
					c.mu.Lock()
					c.close = ce
					c.mu.Unlock()
				}
				return
			}
			var ev map[string]any
			if json.Unmarshal(msg, &ev) == nil {
				c.mu.Lock()
				c.types = append(c.types, fmt.Sprint(ev["type"]))
				c.mu.Unlock()
				c.events <- ev
			}
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return c, 101, nil
}

func bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

// next waits for an event of type typ; events of other types stay
// queued for later calls, so waits need not follow the server's order.
func (c *controller) next(t *testing.T, typ string, within time.Duration) map[string]any {
	t.Helper()
	for i, ev := range c.pending {
		if ev["type"] == typ {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			return ev
		}
	}
	deadline := time.After(within)
	for {
		select {
		case ev := <-c.events:
			if ev["type"] == typ {
				return ev
			}
			c.pending = append(c.pending, ev)
		case <-deadline:
			t.Fatalf("no %s within %s; seen %v", typ, within, c.seen())
		}
	}
}

// nextAny waits for the next event, whatever its type, in the server's
// order.
func (c *controller) nextAny(t *testing.T, within time.Duration) map[string]any {
	t.Helper()
	if len(c.pending) > 0 {
		ev := c.pending[0]
		c.pending = c.pending[1:]
		return ev
	}
	select {
	case ev := <-c.events:
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %s; seen %v", within, c.seen())
		return nil
	}
}

// nextWhere waits for an event of type typ whose member key is val.
func (c *controller) nextWhere(t *testing.T, typ, key, val string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ev := c.next(t, typ, time.Until(deadline))
		if fmt.Sprint(ev[key]) == val {
			return ev
		}
	}
}

func (c *controller) send(t *testing.T, ev any) {
	t.Helper()
	require.NoError(t, c.conn.WriteJSON(ev))
}

func (c *controller) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.types...)
}

// waitClosed waits for the server to close the socket and returns the
// close frame.
func (c *controller) waitClosed(t *testing.T, within time.Duration) *websocket.CloseError {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(within):
		t.Fatalf("socket still open after %s", within)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.close
}

// withDrain adds a short drain time so a failed test stops quickly.
func withDrain(env map[string]string) map[string]string {
	out := map[string]string{"SWITCHBOARD_DRAIN_TIMEOUT": "1s"}
	for k, v := range env {
		out[k] = v
	}
	return out
}
