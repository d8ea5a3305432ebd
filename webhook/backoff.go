package webhook

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff returns the wait after the n-th failed attempt (n from 1):
// InitialBackoff·Factor^(n-1), capped at MaxBackoff, with the low Jitter
// fraction randomised.
func (o *Options) backoff(n int) time.Duration {
	w := float64(o.InitialBackoff)
	for i := 1; i < n && w < float64(o.MaxBackoff); i++ {
		w *= o.BackoffFactor
	}
	w = min(w, float64(o.MaxBackoff))
	if o.Jitter > 0 {
		w -= w * o.Jitter * rand.Float64()
	}
	return time.Duration(w)
}

// retryable reports whether a response status is worth another attempt:
// every 5xx, and the 4xx that mean "not now" rather than "never":
// 408 Request Timeout, 409 Conflict, 425 Too Early, 429 Too Many Requests.
// Other statuses (other 4xx, 3xx since redirects are not followed) end the
// delivery.
func retryable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500 && status <= 599
}

// maxRetryAfterSecs caps a Retry-After (a day; any window is shorter).
const maxRetryAfterSecs = 86400

// retryAfter parses a Retry-After header (RFC 9110 §10.2.3): delay-seconds
// or an HTTP-date, relative to now, capped at a day. It returns 0 when
// absent, invalid or in the past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, maxRetryAfterSecs)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, maxRetryAfterSecs*time.Second)
		}
	}
	return 0
}
