package conversation

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the conversation metrics, each defined here once.
type Metrics struct {
	providerErrors *prometheus.CounterVec
	sttDrops       prometheus.Counter
}

// Kinds of provider errors (switchboard_provider_errors_total's kind).
const (
	// ProviderOpen: the engine's session could not be opened (or was not
	// ready in time).
	ProviderOpen = "open"
	// ProviderErrorEvent: the session sent an error event.
	ProviderErrorEvent = "error_event"
	// ProviderDropped: the session ended in the middle of a call.
	ProviderDropped = "dropped"
)

// NewMetrics registers the conversation metrics with reg (nil: not
// exported).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{providerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_provider_errors_total",
		Help: "Model provider (realtime engine) failures, by engine and kind (open, error_event, dropped)."}, []string{"engine", "kind"}),
		sttDrops: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_stt_fallback_dropped_total",
			Help: "Caller turns (or pieces of a long one) the STT fallback did not transcribe because the transcriber was behind."})}
	if reg != nil {
		reg.MustRegister(m.providerErrors, m.sttDrops)
	}
	return m
}

// providerError counts one failure of engine.
func (m *Metrics) providerError(engine, kind string) {
	if m != nil {
		m.providerErrors.WithLabelValues(engine, kind).Inc()
	}
}

// sttDropped counts n turns (or pieces) the STT fallback did not
// transcribe.
func (m *Metrics) sttDropped(n int) {
	if m != nil {
		m.sttDrops.Add(float64(n))
	}
}
