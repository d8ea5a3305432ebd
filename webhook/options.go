package webhook

import (
	"context"
	"net/http"
	"time"
)

// Options configures a Dispatcher. The zero value is usable: every zero
// field takes the default listed beside it.
type Options struct {
	// AttemptTimeout bounds one POST (connect, send, response headers and
	// the capped body read), and one OAuth token request. Default 3 s.
	AttemptTimeout time.Duration
	// MaxElapsed bounds one delivery when the caller's context has a later
	// deadline or none (lifecycle events delivered by DeliverAsync, which
	// have no ring window). Default 30 s.
	MaxElapsed time.Duration
	// InitialBackoff is the wait after the first failed attempt. Default
	// 250 ms.
	InitialBackoff time.Duration
	// BackoffFactor multiplies the wait after each further failure.
	// Default 2.
	BackoffFactor float64
	// MaxBackoff caps the wait between attempts (a Retry-After header is
	// honoured beyond it). Default 2 s.
	MaxBackoff time.Duration
	// Jitter is the fraction of each wait that is randomised: the wait is
	// drawn uniformly from [w·(1-Jitter), w]. Default 0.2; negative means
	// none.
	Jitter float64
	// UserAgent is sent as User-Agent. Default "switchboard-webhook/1".
	UserAgent string
	// MaxResponseBytes caps how much of a response body is read (and kept
	// in Result.Body for a 2xx). Default 64 KiB.
	MaxResponseBytes int64
	// Metrics, when set, observe every attempt's latency.
	Metrics *Metrics
	// Workers is the number of goroutines serving DeliverAsync. Default 4.
	Workers int
	// QueueSize is how many DeliverAsync events may wait for a worker;
	// beyond it events are dropped. Default 256.
	QueueSize int
	// CloseTimeout is how long Close lets queued and in-flight async
	// deliveries run before it cancels them. Default 5 s.
	CloseTimeout time.Duration
	// Transport sends the requests. Default: a clone of
	// http.DefaultTransport whose connections pass Addresses, owned (and
	// closed) by the Dispatcher.
	Transport http.RoundTripper
	// Addresses says which addresses the default transport may connect to
	// (the zero value: no link-local or metadata address).
	Addresses AddressPolicy
	// Now is the clock for webhook-timestamp, Attempt.At and OAuth token
	// expiry. Default time.Now.
	Now func() time.Time
	// Sleep waits between attempts; it returns early with ctx's error when
	// ctx ends. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Defaults of Options.
const (
	DefaultAttemptTimeout   = 3 * time.Second
	DefaultMaxElapsed       = 30 * time.Second
	DefaultInitialBackoff   = 250 * time.Millisecond
	DefaultBackoffFactor    = 2.0
	DefaultMaxBackoff       = 2 * time.Second
	DefaultJitter           = 0.2
	DefaultUserAgent        = "switchboard-webhook/1"
	DefaultMaxResponseBytes = 64 << 10
	DefaultWorkers          = 4
	DefaultQueueSize        = 256
	DefaultCloseTimeout     = 5 * time.Second
)

func (o Options) withDefaults() Options {
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.MaxElapsed <= 0 {
		o.MaxElapsed = DefaultMaxElapsed
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = DefaultInitialBackoff
	}
	if o.BackoffFactor < 1 {
		o.BackoffFactor = DefaultBackoffFactor
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	switch {
	case o.Jitter == 0:
		o.Jitter = DefaultJitter
	case o.Jitter < 0:
		o.Jitter = 0
	case o.Jitter > 1:
		o.Jitter = 1
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	return o
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
