package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newSecret returns a fresh whsec_ signing secret.
func newSecret(t testing.TB) string {
	t.Helper()
	key := make([]byte, 24)
	_, _ = rand.Read(key)
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// testLogger logs through t.
func testLogger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
}

// received is one request as the test receiver saw it.
type received struct {
	header    http.Header
	body      []byte
	verifyErr error // standardwebhooks Verify at arrival
}

// receiver is a loopback webhook endpoint that verifies every request with
// the Standard Webhooks library and answers with respond.
type receiver struct {
	srv     *httptest.Server
	secret  string
	respond func(n int, w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex
	reqs []received
}

// newReceiver starts a receiver on 127.0.0.1; respond gets the 0-based
// request number. A nil respond answers 204.
func newReceiver(t testing.TB, secret string, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{secret: secret, respond: respond}
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := received{header: r.Header.Clone(), body: body, verifyErr: wh.Verify(body, r.Header)}
		rc.mu.Lock()
		n := len(rc.reqs)
		rc.reqs = append(rc.reqs, rec)
		rc.mu.Unlock()
		if rc.respond == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		rc.respond(n, w, r)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// requests returns a copy of what arrived so far.
func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.reqs...)
}

// target returns a Target for this receiver.
func (rc *receiver) target() Target {
	return Target{ID: "wh_test", URL: rc.srv.URL + "/hooks/call", SigningSecret: rc.secret}
}

// status returns a respond function answering the given statuses in turn
// (the last one repeats).
func statuses(codes ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(codes[min(n, len(codes)-1)])
	}
}

// fakeClock is a settable clock whose Sleep advances it instead of waiting.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// newTestDispatcher builds a dispatcher closed at cleanup.
func newTestDispatcher(t testing.TB, opts Options) *Dispatcher {
	t.Helper()
	d := NewDispatcher(opts, testLogger(t))
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// incoming returns a sample realtime.call.incoming event.
func incoming(now time.Time) Event {
	return NewCallIncoming(now, CallIncoming{
		CallID:        "0b6c1c5e-4c1a-4c52-9d0e-6f9a4a0c2b11",
		PhoneNumberID: "pn_123",
		From:          "+15550100",
		To:            "+15550199",
		SIPHeaders: []SIPHeader{
			{Name: "From", Value: "<sip:+15550100@pbx.example>;tag=a1"},
			{Name: "To", Value: "<sip:+15550199@switchboard.example>"},
			{Name: "Call-ID", Value: "abc@pbx.example"},
			{Name: "P-Asserted-Identity", Value: "<sip:+15550100@pbx.example>"},
			{Name: "Diversion", Value: "<sip:+15550111@pbx.example>;reason=no-answer"},
		},
	})
}
