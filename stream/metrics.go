package stream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the streams' Prometheus figures. A nil *Metrics counts
// nothing.
type Metrics struct {
	active        prometheus.Gauge
	connects      *prometheus.CounterVec
	connectTime   prometheus.Histogram
	refusals      *prometheus.CounterVec
	framesDropped prometheus.Counter
	audioLost     prometheus.Counter
	fallbacks     prometheus.Counter
}

// NewMetrics registers the streams' metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_streams_active",
			Help: "Media streams open to bots."}),
		connects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_stream_connects_total",
			Help: "Media streams dialed, by result: ok, or unreachable (no connection, no upgrade in time, refused, forbidden address)."}, []string{"result"}),
		connectTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_stream_connect_seconds",
			Help: "Time from dialing a bot to its stream being open.", Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_stream_messages_refused_total",
			Help: "Messages from bots refused and ignored, by reason (invalid_json, unknown_event, bad_base64, …)."}, []string{"reason"}),
		framesDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_stream_frames_dropped_total",
			Help: "Frames of callers' audio not sent to bots too slow to read them."}),
		audioLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_stream_audio_dropped_seconds_total",
			Help: "Audio from bots dropped, the oldest first, for exceeding streams.max_queue (bots sending faster than real time)."}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_stream_fallbacks_total",
			Help: "Streamed calls handed to their fallback agent."}),
	}
	reg.MustRegister(m.active, m.connects, m.connectTime, m.refusals, m.framesDropped, m.audioLost, m.fallbacks)
	return m
}

func (m *Metrics) connected(d time.Duration) {
	if m != nil {
		m.active.Inc()
		m.connects.WithLabelValues("ok").Inc()
		m.connectTime.Observe(d.Seconds())
	}
}

func (m *Metrics) connectFailed() {
	if m != nil {
		m.connects.WithLabelValues("unreachable").Inc()
	}
}

func (m *Metrics) closed() {
	if m != nil {
		m.active.Dec()
	}
}

func (m *Metrics) countRefused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) frameDropped() {
	if m != nil {
		m.framesDropped.Inc()
	}
}

func (m *Metrics) audioDropped(d time.Duration) {
	if m != nil {
		m.audioLost.Add(d.Seconds())
	}
}

func (m *Metrics) countFallback() {
	if m != nil {
		m.fallbacks.Inc()
	}
}
