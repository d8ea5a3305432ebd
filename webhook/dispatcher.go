package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Dispatcher delivers signed events to webhooks. Deliver is synchronous
// (the incoming-call event, inside the ring window); DeliverAsync queues
// lifecycle events for a small worker pool. A Dispatcher is safe for
// concurrent use; Close stops it.
type Dispatcher struct {
	opts         Options
	log          zerolog.Logger
	client       *http.Client
	ownTransport *http.Transport
	tokens       *tokenSource

	closed    atomic.Bool
	mu        sync.RWMutex // guards sending on queue against its close
	queue     chan asyncJob
	base      context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// NewDispatcher returns a Dispatcher with its async workers started. Call
// Close to stop them.
func NewDispatcher(opts Options, log zerolog.Logger) *Dispatcher {
	opts = opts.withDefaults()
	d := &Dispatcher{opts: opts, log: log}
	rt := opts.Transport
	if rt == nil {
		tr := opts.Addresses.Transport()
		tr.MaxIdleConnsPerHost = 16
		d.ownTransport = tr
		rt = tr
	}
	d.client = &http.Client{
		Transport: rt,
		// Redirects are not followed: the signature and the credential
		// were made for the configured URL only. A 3xx ends the delivery.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	d.tokens = newTokenSource(d.client, &d.opts)
	d.queue = make(chan asyncJob, opts.QueueSize)
	d.base, d.cancel = context.WithCancel(context.Background())
	d.wg.Add(opts.Workers)
	for range opts.Workers {
		go d.worker()
	}
	return d
}

// Deliver POSTs ev to the target, signed per Standard Webhooks v1, and
// retries until a 2xx, a status that is not retried (StatusError), or the
// end of ctx (the caller sets its deadline to the ring window; the
// delivery also ends after Options.MaxElapsed).
//
// Every attempt carries the same webhook-id (the event id) and a fresh
// webhook-timestamp and signature. Retried statuses are 5xx, 408, 409, 425
// and 429; the wait between attempts grows exponentially from
// Options.InitialBackoff up to Options.MaxBackoff, or is the response's
// Retry-After. When the next attempt could not start before ctx's deadline,
// Deliver stops at once rather than sleep through the rest of the window.
// With OAuth, a 401 from the receiver drops the cached token and retries
// once, at once, with a new one.
//
// The Result lists every attempt whatever the outcome. The error is nil
// exactly when Result.Delivered is true; it wraps ErrInvalidTarget, a
// *StatusError, or the context's error (context.DeadlineExceeded also when
// the window is too short for the next attempt).
func (d *Dispatcher) Deliver(ctx context.Context, t Target, ev Event) (Result, error) {
	if d.closed.Load() {
		return Result{EventID: ev.ID}, ErrClosed
	}
	return d.deliver(ctx, t, ev)
}

// deliver is Deliver without the closed check.
func (d *Dispatcher) deliver(ctx context.Context, t Target, ev Event) (Result, error) {
	res := Result{EventID: ev.ID}
	p, err := d.prepare(t)
	if err != nil {
		return res, fmt.Errorf("deliver %s: %w", ev.ID, err)
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return res, fmt.Errorf("deliver %s: encode event: %w", ev.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.MaxElapsed)
	defer cancel()

	refetched := false
	failures := 0
	for n := 1; ; n++ {
		if ctx.Err() != nil {
			return res, d.giveUp(ev.ID, res, context.Cause(ctx))
		}
		a, o := d.attempt(ctx, t, p, ev.ID, payload)
		res.Attempts = append(res.Attempts, a)
		d.logAttempt(ev, p, n, a)
		if a.Status >= 200 && a.Status <= 299 {
			res.Delivered = true
			res.Body = o.body
			return res, nil
		}
		if o.fatal != nil {
			return res, fmt.Errorf("deliver %s: %w", ev.ID, o.fatal)
		}
		if a.Status == http.StatusUnauthorized && p.oauth && !refetched {
			refetched = true
			d.tokens.invalidate(t.AuthURL, p.clientID, p.clientSecret, o.token)
			continue
		}
		if a.Status != 0 && !retryable(a.Status) {
			return res, fmt.Errorf("deliver %s: %w", ev.ID, &StatusError{Status: a.Status})
		}
		failures++
		wait := o.retryAfter
		if wait <= 0 {
			wait = d.opts.backoff(failures)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			return res, d.giveUp(ev.ID, res, fmt.Errorf("%w (wait %s): %w", errWindow, wait.Round(time.Millisecond), context.DeadlineExceeded))
		}
		if err := d.opts.Sleep(ctx, wait); err != nil {
			return res, d.giveUp(ev.ID, res, err)
		}
	}
}

// giveUp builds the error of a delivery that ran out of time.
func (d *Dispatcher) giveUp(id string, res Result, cause error) error {
	if len(res.Attempts) == 0 {
		return fmt.Errorf("deliver %s: %w", id, cause)
	}
	last := res.Attempts[len(res.Attempts)-1]
	return fmt.Errorf("deliver %s: gave up after %d attempts (last: %s): %w", id, len(res.Attempts), last.Err, cause)
}

// prepared is what Deliver derives once from a Target.
type prepared struct {
	wh           *standardwebhooks.Webhook
	host         string
	oauth        bool
	clientID     string
	clientSecret string
}

// prepare validates t and derives its signer and credentials.
func (d *Dispatcher) prepare(t Target) (prepared, error) {
	var p prepared
	u, err := checkHTTPURL("url", t.URL)
	if err != nil {
		return p, err
	}
	p.host = u.Host
	if t.SigningSecret == "" {
		return p, fmt.Errorf("%w: no signing secret", ErrInvalidTarget)
	}
	// The library's error would quote nothing secret, but keep it out
	// anyway: only say the secret is not base64.
	if p.wh, err = standardwebhooks.NewWebhook(t.SigningSecret); err != nil {
		return p, fmt.Errorf("%w: signing secret is not whsec_ + base64", ErrInvalidTarget)
	}
	if t.AuthURL != "" {
		if _, err := checkHTTPURL("auth_url", t.AuthURL); err != nil {
			return p, err
		}
		if p.clientID, p.clientSecret, err = t.clientCredentials(); err != nil {
			return p, err
		}
		p.oauth = true
	}
	return p, nil
}

// outcome is what Deliver needs from an attempt beyond the Attempt record.
type outcome struct {
	body       []byte
	retryAfter time.Duration
	token      string // the OAuth token used, to invalidate on 401
	fatal      error  // a failure that is not retried
}

// attempt makes one POST. Latency covers the whole attempt, including
// obtaining an OAuth token when the cache has none.
func (d *Dispatcher) attempt(ctx context.Context, t Target, p prepared, id string, payload []byte) (Attempt, outcome) {
	var o outcome
	at := d.opts.Now()
	a := Attempt{At: at}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.opts.AttemptTimeout)
	defer cancel()

	bearer := t.AuthToken
	if p.oauth {
		tok, err := d.tokens.token(ctx, t.AuthURL, p.clientID, p.clientSecret)
		if err != nil {
			a.Latency = time.Since(start)
			a.Err = err.Error()
			if se := (*StatusError)(nil); errors.As(err, &se) {
				o.fatal = err
			}
			return a, o
		}
		bearer, o.token = tok, tok
		// The token may have taken a while: sign with the current time.
		at = d.opts.Now()
	}
	sig, err := p.wh.Sign(id, at, payload)
	if err != nil {
		a.Err = err.Error()
		o.fatal = err
		return a, o
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(payload))
	if err != nil {
		a.Err = err.Error()
		o.fatal = fmt.Errorf("%w: %w", ErrInvalidTarget, err)
		return a, o
	}
	h := req.Header
	setSigned(h, d.opts.UserAgent, id, at, sig)
	// Idempotency-Key marks the POST as safe to replay, which lets the
	// transport resend it at once on a keep-alive connection the receiver
	// closed before reading it, instead of costing an attempt and a backoff.
	h["Idempotency-Key"] = []string{id}
	if bearer != "" {
		h["Authorization"] = []string{"Bearer " + bearer}
	}

	resp, err := d.client.Do(req)
	a.Latency = time.Since(start)
	if err != nil {
		a.Err = scrubURLError(err).Error()
		if errors.Is(err, ErrForbiddenAddress) {
			o.fatal = fmt.Errorf("%w: %w", ErrInvalidTarget, scrubURLError(err))
		}
		return a, o
	}
	defer resp.Body.Close()
	a.Status = resp.StatusCode
	limited := io.LimitReader(resp.Body, d.opts.MaxResponseBytes)
	if a.Status >= 200 && a.Status <= 299 {
		// A 2xx delivered the event even if its body breaks off.
		o.body, _ = io.ReadAll(limited)
		return a, o
	}
	// Drain (capped) so the connection can be reused.
	_, _ = io.Copy(io.Discard, limited)
	a.Err = "status " + strconv.Itoa(a.Status)
	o.retryAfter = retryAfter(resp.Header, d.opts.Now())
	return a, o
}

// logAttempt logs one attempt at debug level (warn for failures). Only the
// URL host is logged: never the path, query, secret or token.
func (d *Dispatcher) logAttempt(ev Event, p prepared, n int, a Attempt) {
	d.opts.Metrics.attempt(ev.Type, a.Status, a.Err != "", a.Latency)
	lvl := zerolog.DebugLevel
	if a.Err != "" {
		lvl = zerolog.WarnLevel
	}
	e := d.log.WithLevel(lvl)
	if e == nil {
		return
	}
	e.Str("event_id", ev.ID).
		Str("event_type", ev.Type).
		Str("webhook_host", p.host).
		Int("attempt", n).
		Int("status", a.Status).
		Dur("latency", a.Latency)
	if a.Err != "" {
		e.Str("error", a.Err)
	}
	e.Msg("webhook attempt")
}

// setSigned writes the Standard Webhooks headers of a signed POST.
func setSigned(h http.Header, userAgent, id string, at time.Time, sig string) {
	h["Content-Type"] = []string{"application/json"}
	h["User-Agent"] = []string{userAgent}
	h[standardwebhooks.HeaderWebhookID] = []string{id}
	h[standardwebhooks.HeaderWebhookTimestamp] = []string{strconv.FormatInt(at.Unix(), 10)}
	h[standardwebhooks.HeaderWebhookSignature] = []string{sig}
}
