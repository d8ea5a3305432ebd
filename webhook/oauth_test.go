package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tokenServer is a loopback OAuth 2.0 token endpoint (client credentials
// grant) that issues "tok-1", "tok-2", … and checks the request.
type tokenServer struct {
	srv       *httptest.Server
	clientID  string
	secret    string
	expiresIn any
	delay     time.Duration
	fail      func(n int) int // status to answer instead of a token; 0 = issue
	arrived   chan int        // when set, gets each request's number on arrival

	calls atomic.Int32
	mu    sync.Mutex
	errs  []string
}

func newTokenServer(t *testing.T, clientID, secret string) *tokenServer {
	t.Helper()
	ts := &tokenServer{clientID: clientID, secret: secret, expiresIn: 60}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(func() {
		ts.srv.Close()
		ts.mu.Lock()
		defer ts.mu.Unlock()
		require.Empty(t, ts.errs, "token requests the endpoint found wrong")
	})
	return ts
}

func (ts *tokenServer) bad(format string, args ...any) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.errs = append(ts.errs, fmt.Sprintf(format, args...))
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	n := int(ts.calls.Add(1))
	if ts.arrived != nil {
		ts.arrived <- n
	}
	select {
	case <-time.After(ts.delay):
	case <-r.Context().Done():
		return
	}
	if ts.fail != nil {
		if st := ts.fail(n); st != 0 {
			w.WriteHeader(st)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
	}
	if r.Method != http.MethodPost {
		ts.bad("method %s", r.Method)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		ts.bad("content-type %q", ct)
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		ts.bad("grant_type %q (%v)", r.PostForm.Get("grant_type"), err)
	}
	if r.PostForm.Has("client_secret") {
		ts.bad("client secret in the body as well as in Basic")
	}
	user, pass, ok := r.BasicAuth()
	id, _ := url.QueryUnescape(user)
	sec, _ := url.QueryUnescape(pass)
	if !ok || id != ts.clientID || sec != ts.secret {
		ts.bad("basic auth %q:%q", user, pass)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": "tok-" + strconv.Itoa(n),
		"token_type":   "Bearer",
		"expires_in":   ts.expiresIn,
	})
}

// bearerLog records the bearer token of every request.
type bearerLog struct {
	mu      sync.Mutex
	bearers []string
}

func (b *bearerLog) add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bearers = append(b.bearers, s)
}

func (b *bearerLog) get() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.bearers...)
}

// bearerReceiver answers 200 to the tokens accept takes and 401 to the
// others, logging every bearer.
func bearerReceiver(t *testing.T, accept func(token string) bool) (*receiver, *bearerLog) {
	t.Helper()
	log := &bearerLog{}
	rc := newReceiver(t, newSecret(t), func(_ int, w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		log.add(tok)
		if !accept(tok) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return rc, log
}

func oauthTarget(rc *receiver, ts *tokenServer, authToken string) Target {
	tg := rc.target()
	tg.AuthURL = ts.srv.URL + "/oauth/token"
	tg.AuthToken = authToken
	return tg
}

func TestOAuthCachedAndRefreshed(t *testing.T) {
	ts := newTokenServer(t, "client one", "s3cr:t&=")
	rc, bearers := bearerReceiver(t, func(string) bool { return true })
	clk := newFakeClock()
	d := newTestDispatcher(t, Options{Now: clk.Now, Sleep: clk.Sleep})
	tg := oauthTarget(rc, ts, "client one:s3cr:t&=")

	deliver := func() {
		t.Helper()
		res, err := d.Deliver(t.Context(), tg, incoming(clk.Now()))
		require.NoError(t, err)
		require.Len(t, res.Attempts, 1)
	}
	deliver()
	deliver()
	clk.Advance(50 * time.Second) // expires_in 60, margin 6 s: still valid
	deliver()
	require.EqualValues(t, 1, ts.calls.Load(), "token cached across deliveries")
	clk.Advance(5 * time.Second) // 55 s > 54 s
	deliver()
	require.EqualValues(t, 2, ts.calls.Load(), "token refreshed before it expires")
	require.Equal(t, []string{"tok-1", "tok-1", "tok-1", "tok-2"}, bearers.get())
	for _, r := range rc.requests() {
		require.NoError(t, r.verifyErr)
	}
}

func TestOAuthClientIDFromWebhookID(t *testing.T) {
	ts := newTokenServer(t, "wh_test", "bare-secret")
	rc, bearers := bearerReceiver(t, func(string) bool { return true })
	d := newTestDispatcher(t, Options{})
	_, err := d.Deliver(t.Context(), oauthTarget(rc, ts, "bare-secret"), incoming(time.Now()))
	require.NoError(t, err)
	require.Equal(t, []string{"tok-1"}, bearers.get())
}

func TestOAuthRefetchOn401(t *testing.T) {
	t.Run("new token accepted", func(t *testing.T) {
		ts := newTokenServer(t, "id", "sec")
		rc, bearers := bearerReceiver(t, func(tok string) bool { return tok != "tok-1" })
		clk := newFakeClock()
		d := newTestDispatcher(t, Options{Now: clk.Now, Sleep: clk.Sleep})
		res, err := d.Deliver(t.Context(), oauthTarget(rc, ts, "id:sec"), incoming(time.Now()))
		require.NoError(t, err)
		require.Len(t, res.Attempts, 2)
		require.Equal(t, 401, res.Attempts[0].Status)
		require.Equal(t, 200, res.Attempts[1].Status)
		require.Equal(t, []string{"tok-1", "tok-2"}, bearers.get())
		require.Empty(t, clk.Sleeps(), "the refetch is immediate")

		// The new token is the cached one now.
		_, err = d.Deliver(t.Context(), oauthTarget(rc, ts, "id:sec"), incoming(time.Now()))
		require.NoError(t, err)
		require.EqualValues(t, 2, ts.calls.Load())
	})
	t.Run("refetched only once", func(t *testing.T) {
		ts := newTokenServer(t, "id", "sec")
		rc, bearers := bearerReceiver(t, func(string) bool { return false })
		d := newTestDispatcher(t, Options{})
		res, err := d.Deliver(t.Context(), oauthTarget(rc, ts, "id:sec"), incoming(time.Now()))
		var se *StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, 401, se.Status)
		require.Len(t, res.Attempts, 2)
		require.Equal(t, []string{"tok-1", "tok-2"}, bearers.get())
		require.EqualValues(t, 2, ts.calls.Load())
	})
}

func TestOAuthTokenEndpointFailures(t *testing.T) {
	t.Run("credential refused", func(t *testing.T) {
		ts := newTokenServer(t, "id", "sec")
		ts.fail = func(int) int { return http.StatusUnauthorized }
		rc, bearers := bearerReceiver(t, func(string) bool { return true })
		d := newTestDispatcher(t, Options{})
		res, err := d.Deliver(t.Context(), oauthTarget(rc, ts, "id:sec"), incoming(time.Now()))
		var se *StatusError
		require.ErrorAs(t, err, &se)
		require.True(t, se.TokenEndpoint)
		require.Equal(t, 401, se.Status)
		require.Len(t, res.Attempts, 1)
		require.Contains(t, res.Attempts[0].Err, "oauth token endpoint")
		require.Empty(t, bearers.get(), "nothing sent to the receiver without a token")
	})
	t.Run("endpoint unavailable then up", func(t *testing.T) {
		ts := newTokenServer(t, "id", "sec")
		ts.fail = func(n int) int {
			if n == 1 {
				return http.StatusServiceUnavailable
			}
			return 0
		}
		rc, bearers := bearerReceiver(t, func(string) bool { return true })
		clk := newFakeClock()
		d := newTestDispatcher(t, Options{Now: clk.Now, Sleep: clk.Sleep})
		res, err := d.Deliver(t.Context(), oauthTarget(rc, ts, "id:sec"), incoming(time.Now()))
		require.NoError(t, err)
		require.Len(t, res.Attempts, 2)
		require.Equal(t, "oauth token: status 503", res.Attempts[0].Err)
		require.Zero(t, res.Attempts[0].Status)
		require.Equal(t, []string{"tok-2"}, bearers.get())
		require.Len(t, clk.Sleeps(), 1)
	})
	t.Run("not a bearer token", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"access_token":"x","token_type":"mac","expires_in":60}`))
		}))
		defer srv.Close()
		rc, _ := bearerReceiver(t, func(string) bool { return true })
		d := newTestDispatcher(t, Options{InitialBackoff: 5 * time.Millisecond})
		tg := rc.target()
		tg.AuthURL, tg.AuthToken = srv.URL, "id:sec"
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		res, err := d.Deliver(ctx, tg, incoming(time.Now()))
		require.Error(t, err)
		require.NotEmpty(t, res.Attempts)
		require.Contains(t, res.Attempts[0].Err, "not bearer")
		require.Empty(t, rc.requests())
	})
}

func TestOAuthConcurrentFetchOnce(t *testing.T) {
	ts := newTokenServer(t, "id", "sec")
	ts.delay = 50 * time.Millisecond
	rc, bearers := bearerReceiver(t, func(string) bool { return true })
	d := newTestDispatcher(t, Options{})
	tg := oauthTarget(rc, ts, "id:sec")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := d.Deliver(t.Context(), tg, incoming(time.Now()))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, ts.calls.Load(), "concurrent deliveries share one token request")
	require.Len(t, bearers.get(), 8)
	for _, b := range bearers.get() {
		require.Equal(t, "tok-1", b)
	}
}

func TestOAuthFetcherGivesUpWaiterFetches(t *testing.T) {
	ts := newTokenServer(t, "id", "sec")
	ts.delay = 300 * time.Millisecond
	ts.arrived = make(chan int, 4)
	rc, bearers := bearerReceiver(t, func(string) bool { return true })
	d := newTestDispatcher(t, Options{})
	tg := oauthTarget(rc, ts, "id:sec")

	// A starts the token request with a short window and gives up.
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	aDone := make(chan error, 1)
	go func() {
		_, err := d.Deliver(short, tg, incoming(time.Now()))
		aDone <- err
	}()
	require.Equal(t, 1, <-ts.arrived)
	// B joins A's token request, then fetches its own when A's is cancelled.
	res, err := d.Deliver(t.Context(), tg, incoming(time.Now()))
	require.NoError(t, err)
	require.True(t, res.Delivered)
	require.ErrorIs(t, <-aDone, context.DeadlineExceeded)
	require.Equal(t, 2, <-ts.arrived)
	require.Equal(t, []string{"tok-2"}, bearers.get())
}

func TestParseExpiresIn(t *testing.T) {
	tests := []struct {
		raw  string
		want time.Duration
	}{
		{`3600`, time.Hour},
		{`"120"`, 2 * time.Minute},
		{`1.5`, 1500 * time.Millisecond},
		{``, defaultTokenLifetime},
		{`null`, defaultTokenLifetime},
		{`0`, defaultTokenLifetime},
		{`-5`, defaultTokenLifetime},
		{`"soon"`, defaultTokenLifetime},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			require.Equal(t, tt.want, parseExpiresIn(json.RawMessage(tt.raw)))
		})
	}
}

func FuzzParseExpiresIn(f *testing.F) {
	for _, s := range []string{`3600`, `"60"`, `1e3`, `null`, `-1`, `NaN`, `"Inf"`, `1e400`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := parseExpiresIn(json.RawMessage(s))
		require.Positive(t, d)
		require.LessOrEqual(t, d, time.Duration(1e9)*time.Second)
	})
}
