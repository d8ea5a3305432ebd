package rtc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a browser's offer (switchboard_webrtc_offers_total).
const (
	offerAnswered     = "answered"      // the call was set up and the browser connected
	offerBad          = "bad_offer"     // the offer could not be used (400)
	offerRefused      = "refused"       // the call was refused (the agent, the engine, a timeout)
	offerNotConnected = "not_connected" // answered, but ICE/DTLS never came up
)

// Metrics are the browser calls' own figures; everything else about the
// call (duration, media, health) is in the call metrics, as for a phone.
type Metrics struct {
	offers  *prometheus.CounterVec
	connect *prometheus.HistogramVec
}

// NewMetrics registers the browser-call metrics with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		offers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_webrtc_offers_total",
			Help: "SDP offers of browser calls (POST /v1/realtime/calls), by outcome."}, []string{"result"}),
		connect: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_webrtc_connect_seconds",
			Help:    "From the SDP answer to ICE and DTLS connected, by codec.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"codec"}),
	}
	for _, r := range []string{offerAnswered, offerBad, offerRefused, offerNotConnected} {
		m.offers.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.offers, m.connect)
	}
	return m
}

func (m *Metrics) offer(result string) { m.offers.WithLabelValues(result).Inc() }

func (m *Metrics) connected(codec string, d time.Duration) {
	m.connect.WithLabelValues(codec).Observe(d.Seconds())
}
