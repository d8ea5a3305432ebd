package registration

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/store"
)

// Metrics are the registrations' Prometheus metrics.
type Metrics struct {
	states   *prometheus.GaugeVec
	requests *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		states: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "switchboard_sip_registrations",
			Help: "Registrations this node holds at registrars (outbound registration), by state (registering, registered, failed)."},
			[]string{"state"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_sip_register_total",
			Help: "REGISTER exchanges with registrars (refreshes and unregisters included), by outcome: the final status, or error when none came."},
			[]string{"status"}),
	}
	for _, s := range []string{store.RegistrationRegistering, store.RegistrationRegistered, store.RegistrationFailed} {
		m.states.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.states, m.requests)
	}
	return m
}

// moved counts a binding leaving state from and entering state to (""
// for none, and off is not counted).
func (m *Metrics) moved(from, to string) {
	if m == nil || from == to {
		return
	}
	if from != "" && from != store.RegistrationOff {
		m.states.WithLabelValues(from).Dec()
	}
	if to != "" && to != store.RegistrationOff {
		m.states.WithLabelValues(to).Inc()
	}
}

// exchanged counts one REGISTER exchange that ended with status (0: none).
func (m *Metrics) exchanged(status int) {
	if m == nil {
		return
	}
	label := "error"
	if status > 0 {
		label = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(label).Inc()
}
