package conversation

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the conversation metrics, each defined here once.
type Metrics struct {
	providerErrors *prometheus.CounterVec
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
		Help: "Model provider (realtime engine) failures, by engine and kind (open, error_event, dropped)."}, []string{"engine", "kind"})}
	if reg != nil {
		reg.MustRegister(m.providerErrors)
	}
	return m
}

// providerError counts one failure of engine.
func (m *Metrics) providerError(engine, kind string) {
	if m != nil {
		m.providerErrors.WithLabelValues(engine, kind).Inc()
	}
}
