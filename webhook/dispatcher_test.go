package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

func TestDeliverSignedAndVerified(t *testing.T) {
	secret := newSecret(t)
	rc := newReceiver(t, secret, nil)
	d := newTestDispatcher(t, Options{})
	ev := incoming(time.Now())

	res, err := d.Deliver(t.Context(), rc.target(), ev)
	require.NoError(t, err)
	require.True(t, res.Delivered)
	require.Equal(t, ev.ID, res.EventID)
	require.Len(t, res.Attempts, 1)
	require.Equal(t, http.StatusNoContent, res.Attempts[0].Status)
	require.Empty(t, res.Attempts[0].Err)
	require.Positive(t, res.Attempts[0].Latency)

	reqs := rc.requests()
	require.Len(t, reqs, 1)
	got := reqs[0]
	require.NoError(t, got.verifyErr, "the Standard Webhooks library must accept the signature")
	require.Equal(t, ev.ID, got.header.Get("webhook-id"))
	require.Equal(t, ev.ID, got.header.Get("Idempotency-Key"))
	require.Equal(t, "application/json", got.header.Get("Content-Type"))
	require.Equal(t, DefaultUserAgent, got.header.Get("User-Agent"))
	require.Empty(t, got.header.Get("Authorization"))
	require.True(t, strings.HasPrefix(got.header.Get("webhook-signature"), "v1,"))

	var body map[string]any
	require.NoError(t, json.Unmarshal(got.body, &body))
	require.Equal(t, "event", body["object"])
	require.Equal(t, TypeCallIncoming, body["type"])
	require.Equal(t, ev.ID, body["id"])
	data := body["data"].(map[string]any)
	require.Equal(t, "+15550100", data["from"])
	require.Len(t, data["sip_headers"], 5)

	t.Run("wrong secret", func(t *testing.T) {
		other, err := standardwebhooks.NewWebhook(newSecret(t))
		require.NoError(t, err)
		require.ErrorIs(t, other.Verify(got.body, got.header), standardwebhooks.ErrNoMatchingSignature)
	})
	t.Run("changed body", func(t *testing.T) {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		changed := bytes.Replace(got.body, []byte("+15550100"), []byte("+15550666"), 1)
		require.NotEqual(t, got.body, changed)
		require.ErrorIs(t, wh.Verify(changed, got.header), standardwebhooks.ErrNoMatchingSignature)
	})
	t.Run("changed timestamp", func(t *testing.T) {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		h := got.header.Clone()
		ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
		require.NoError(t, err)
		h.Set("webhook-timestamp", strconv.FormatInt(ts-1, 10))
		require.ErrorIs(t, wh.Verify(got.body, h), standardwebhooks.ErrNoMatchingSignature)
	})
	t.Run("changed id", func(t *testing.T) {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		h := got.header.Clone()
		h.Set("webhook-id", NewEventID())
		require.ErrorIs(t, wh.Verify(got.body, h), standardwebhooks.ErrNoMatchingSignature)
	})
}

func TestDeliverOldTimestampRejected(t *testing.T) {
	secret := newSecret(t)
	rc := newReceiver(t, secret, nil)
	// A dispatcher whose clock is 6 minutes slow signs with a timestamp
	// outside the receiver's 5-minute tolerance.
	d := newTestDispatcher(t, Options{Now: func() time.Time { return time.Now().Add(-6 * time.Minute) }})
	_, err := d.Deliver(t.Context(), rc.target(), incoming(time.Now()))
	require.NoError(t, err)
	got := rc.requests()[0]
	require.ErrorIs(t, got.verifyErr, standardwebhooks.ErrMessageTooOld)
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.VerifyIgnoringTimestamp(got.body, got.header), "only the timestamp is at fault")
}

func TestDeliverRetriesSameID(t *testing.T) {
	secret := newSecret(t)
	rc := newReceiver(t, secret, statuses(500, 503, 200))
	clk := newFakeClock()
	d := newTestDispatcher(t, Options{Now: clk.Now, Sleep: clk.Sleep, InitialBackoff: time.Second, Jitter: -1})
	ev := incoming(clk.Now())

	res, err := d.Deliver(t.Context(), rc.target(), ev)
	require.NoError(t, err)
	require.True(t, res.Delivered)
	require.Len(t, res.Attempts, 3)
	require.Equal(t, []int{500, 503, 200}, []int{res.Attempts[0].Status, res.Attempts[1].Status, res.Attempts[2].Status})
	require.Equal(t, "status 500", res.Attempts[0].Err)
	require.Equal(t, "status 503", res.Attempts[1].Err)
	require.Empty(t, res.Attempts[2].Err)
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second}, clk.Sleeps())

	reqs := rc.requests()
	require.Len(t, reqs, 3)
	stamps := make(map[string]bool)
	for i, r := range reqs {
		require.NoError(t, r.verifyErr, "attempt %d", i)
		require.Equal(t, ev.ID, r.header.Get("webhook-id"), "attempt %d", i)
		require.Equal(t, reqs[0].body, r.body, "attempt %d", i)
		stamps[r.header.Get("webhook-timestamp")] = true
	}
	require.Len(t, stamps, 3, "each attempt is signed with its own current timestamp")
	require.Equal(t, res.Attempts[0].At.Add(time.Second), res.Attempts[1].At)
}

func TestDeliverStatusClasses(t *testing.T) {
	tests := []struct {
		status int
		retry  bool
	}{
		{400, false}, {401, false}, {403, false}, {404, false}, {410, false}, {422, false},
		{301, false}, {307, false},
		{408, true}, {409, true}, {425, true}, {429, true},
		{500, true}, {502, true}, {503, true}, {504, true},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			rc := newReceiver(t, newSecret(t), func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 0 {
					// A redirect, if followed, would lead to a 200.
					w.Header().Set("Location", "/elsewhere")
					w.WriteHeader(tt.status)
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			clk := newFakeClock()
			d := newTestDispatcher(t, Options{Now: clk.Now, Sleep: clk.Sleep})
			res, err := d.Deliver(t.Context(), rc.target(), incoming(time.Now()))
			if tt.retry {
				require.NoError(t, err)
				require.Len(t, res.Attempts, 2)
				require.Len(t, rc.requests(), 2)
				return
			}
			var se *StatusError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tt.status, se.Status)
			require.False(t, se.TokenEndpoint)
			require.False(t, res.Delivered)
			require.Len(t, res.Attempts, 1)
			require.Len(t, rc.requests(), 1, "not retried, redirect not followed")
			require.Empty(t, clk.Sleeps())
		})
	}
}

func TestDeliverRetryAfter(t *testing.T) {
	rc := newReceiver(t, newSecret(t), func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	clk := newFakeClock()
	d := newTestDispatcher(t, Options{Now: clk.Now, Sleep: clk.Sleep})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := d.Deliver(ctx, rc.target(), incoming(time.Now()))
	require.NoError(t, err)
	require.Len(t, res.Attempts, 2)
	require.Equal(t, []time.Duration{3 * time.Second}, clk.Sleeps(), "Retry-After beyond MaxBackoff is honoured")

	t.Run("beyond the window", func(t *testing.T) {
		rc := newReceiver(t, newSecret(t), func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		clk := newFakeClock()
		d := newTestDispatcher(t, Options{Now: clk.Now, Sleep: clk.Sleep})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		res, err := d.Deliver(ctx, rc.target(), incoming(time.Now()))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, errWindow)
		require.Len(t, res.Attempts, 1)
		require.Empty(t, clk.Sleeps(), "no point sleeping past the ring window")
	})
}

func TestDeliverRingWindow(t *testing.T) {
	t.Run("failing receiver", func(t *testing.T) {
		rc := newReceiver(t, newSecret(t), statuses(503))
		d := newTestDispatcher(t, Options{InitialBackoff: 20 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		res, err := d.Deliver(ctx, rc.target(), incoming(time.Now()))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.False(t, res.Delivered)
		require.GreaterOrEqual(t, len(res.Attempts), 2)
		require.Len(t, rc.requests(), len(res.Attempts), "every attempt is in the result")
		for i, a := range res.Attempts {
			require.Equal(t, 503, a.Status, "attempt %d", i)
			require.Equal(t, "status 503", a.Err)
			if i > 0 {
				require.True(t, a.At.After(res.Attempts[i-1].At))
			}
		}
	})
	t.Run("hanging receiver", func(t *testing.T) {
		rc := newReceiver(t, newSecret(t), func(_ int, w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})
		d := newTestDispatcher(t, Options{})
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel()
		res, err := d.Deliver(ctx, rc.target(), incoming(time.Now()))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, res.Attempts, 1)
		require.Zero(t, res.Attempts[0].Status)
		require.Contains(t, res.Attempts[0].Err, "deadline exceeded")
	})
	t.Run("nothing listening", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		d := newTestDispatcher(t, Options{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		res, err := d.Deliver(ctx, Target{URL: "http://" + addr + "/x", SigningSecret: newSecret(t)}, incoming(time.Now()))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.GreaterOrEqual(t, len(res.Attempts), 2, "connection refused is retried")
		require.Zero(t, res.Attempts[0].Status)
		require.Contains(t, res.Attempts[0].Err, "refused")
	})
	t.Run("MaxElapsed without a deadline", func(t *testing.T) {
		rc := newReceiver(t, newSecret(t), statuses(500))
		d := newTestDispatcher(t, Options{MaxElapsed: 100 * time.Millisecond, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond})
		_, err := d.Deliver(context.Background(), rc.target(), incoming(time.Now()))
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestDeliverBearerAndBody(t *testing.T) {
	rc := newReceiver(t, newSecret(t), func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok_static" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"accepted":true,"padding":"xxxxxxxxxxxxxxxx"}`))
	})
	d := newTestDispatcher(t, Options{MaxResponseBytes: 16})
	tg := rc.target()
	tg.AuthToken = "tok_static"
	res, err := d.Deliver(t.Context(), tg, incoming(time.Now()))
	require.NoError(t, err)
	require.Equal(t, `{"accepted":true`, string(res.Body), "body capped at MaxResponseBytes")
	require.Equal(t, 200, res.Attempts[0].Status)
}

func TestDeliverInvalidTarget(t *testing.T) {
	secret := newSecret(t)
	tests := []struct {
		name string
		tg   Target
	}{
		{"no url", Target{SigningSecret: secret}},
		{"relative url", Target{URL: "/hook", SigningSecret: secret}},
		{"ftp url", Target{URL: "ftp://127.0.0.1/hook", SigningSecret: secret}},
		{"no secret", Target{URL: "http://127.0.0.1:1/hook"}},
		{"secret not base64", Target{URL: "http://127.0.0.1:1/hook", SigningSecret: "whsec_!!!"}},
		{"auth_url without token", Target{URL: "http://127.0.0.1:1/hook", SigningSecret: secret, AuthURL: "http://127.0.0.1:1/token"}},
		{"auth_url without client id", Target{URL: "http://127.0.0.1:1/hook", SigningSecret: secret, AuthURL: "http://127.0.0.1:1/token", AuthToken: "secretonly"}},
		{"bad auth_url", Target{ID: "wh", URL: "http://127.0.0.1:1/hook", SigningSecret: secret, AuthURL: "token", AuthToken: "s"}},
	}
	d := newTestDispatcher(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := d.Deliver(t.Context(), tt.tg, incoming(time.Now()))
			require.ErrorIs(t, err, ErrInvalidTarget)
			require.Empty(t, res.Attempts)
			require.NotContains(t, err.Error(), "secretonly")
		})
	}
}

func TestDeliverLogsNoSecrets(t *testing.T) {
	secret := newSecret(t)
	rc := newReceiver(t, secret, statuses(500, 200))
	var buf bytes.Buffer
	clk := newFakeClock()
	d := NewDispatcher(Options{Now: clk.Now, Sleep: clk.Sleep}, zerolog.New(&buf).Level(zerolog.DebugLevel))
	defer func() { require.NoError(t, d.Close()) }()
	tg := rc.target()
	tg.URL += "?key=querysecret"
	tg.AuthToken = "bearersecret"
	ev := incoming(time.Now())
	_, err := d.Deliver(t.Context(), tg, ev)
	require.NoError(t, err)
	logs := buf.String()
	require.Contains(t, logs, ev.ID)
	require.Contains(t, logs, `"attempt":2`)
	require.Contains(t, logs, rc.srv.Listener.Addr().String())
	for _, s := range []string{secret, strings.TrimPrefix(secret, "whsec_"), "bearersecret", "querysecret", "/hooks/call"} {
		require.NotContains(t, logs, s)
	}
}

func TestDeliverAfterClose(t *testing.T) {
	d := NewDispatcher(Options{}, testLogger(t))
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "idempotent")
	_, err := d.Deliver(t.Context(), Target{}, incoming(time.Now()))
	require.True(t, errors.Is(err, ErrClosed))
	require.ErrorIs(t, d.DeliverAsync(Target{}, incoming(time.Now()), nil), ErrClosed)
}
