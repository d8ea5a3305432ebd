package webhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the webhook delivery metrics, each defined here once.
type Metrics struct {
	attempts *prometheus.HistogramVec
}

// NewMetrics registers the webhook metrics with reg (nil: not exported).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_webhook_attempt_seconds",
		Help:    "Latency of each webhook POST (and OAuth token fetch), by event type and result (ok, http_error, error).",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 3, 5}}, []string{"event_type", "result"})}
	if reg != nil {
		reg.MustRegister(m.attempts)
	}
	return m
}

// attempt observes one attempt.
func (m *Metrics) attempt(eventType string, status int, failed bool, latency time.Duration) {
	if m == nil {
		return
	}
	result := "ok"
	switch {
	case failed && status != 0:
		result = "http_error"
	case failed:
		result = "error"
	}
	m.attempts.WithLabelValues(eventType, result).Observe(latency.Seconds())
}
