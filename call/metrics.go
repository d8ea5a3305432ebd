package call

import (
	"github.com/prometheus/client_golang/prometheus"

	"switchboard/media"
)

// Metrics are the call metrics, each defined here once. It implements
// sip.Metrics for INVITE outcomes.
type Metrics struct {
	invites    *prometheus.CounterVec
	active     prometheus.Gauge
	duration   prometheus.Histogram
	rtpPackets *prometheus.CounterVec
	rtpLost    prometheus.Counter
	rtpLate    prometheus.Counter
	concealed  prometheus.Counter
	jitter     prometheus.Histogram
	ended      *prometheus.CounterVec
}

// NewMetrics registers the call metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		invites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_sip_invites_total",
			Help: "INVITEs received, by outcome."}, []string{"result"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_calls_active",
			Help: "Calls in progress (ringing or answered)."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_call_duration_seconds",
			Help: "Duration of answered calls, from answer to end.", Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}}),
		rtpPackets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_rtp_packets_total",
			Help: "RTP packets, by direction (in, out)."}, []string{"direction"}),
		rtpLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_rtp_packets_lost_total",
			Help: "Inbound RTP packets lost (RFC 3550 cumulative loss)."}),
		rtpLate: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_rtp_late_frames_total",
			Help: "Inbound RTP packets that arrived after their playout time."}),
		concealed: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_rtp_concealed_frames_total",
			Help: "Inbound frames replaced by loss concealment."}),
		jitter: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_rtp_jitter_seconds",
			Help: "Inbound interarrival jitter (RFC 3550) of each call at its end.", Buckets: []float64{.001, .0025, .005, .01, .02, .04, .08, .16}}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_calls_ended_total",
			Help: "Calls ended, by who ended them (caller, appliance, rejected)."}, []string{"ended_by"}),
	}
	if reg != nil {
		reg.MustRegister(m.invites, m.active, m.duration, m.rtpPackets, m.rtpLost, m.rtpLate, m.concealed, m.jitter, m.ended)
	}
	return m
}

// InviteResult counts one INVITE outcome (sip.Metrics).
func (m *Metrics) InviteResult(result string) { m.invites.WithLabelValues(result).Inc() }

func (m *Metrics) callEnded(endedBy string, answeredFor float64, st media.StatsSnapshot) {
	m.ended.WithLabelValues(endedBy).Inc()
	if answeredFor > 0 {
		m.duration.Observe(answeredFor)
	}
	m.rtpPackets.WithLabelValues("in").Add(float64(st.PacketsIn))
	m.rtpPackets.WithLabelValues("out").Add(float64(st.PacketsOut))
	if st.Lost > 0 {
		m.rtpLost.Add(float64(st.Lost))
	}
	m.rtpLate.Add(float64(st.Late))
	m.concealed.Add(float64(st.Concealed))
	if st.PacketsIn > 0 {
		m.jitter.Observe(st.Jitter.Seconds())
	}
}
