package call

import "github.com/prometheus/client_golang/prometheus"

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

	answered    prometheus.Counter
	lossRatio   prometheus.Histogram
	turnLatency prometheus.Histogram
	firstAudio  prometheus.Histogram
	bargeIns    prometheus.Counter
	silence     *prometheus.CounterVec
	oneWay      prometheus.Gauge
	degradedNow prometheus.Gauge
	degraded    *prometheus.CounterVec
	panics      prometheus.Counter
	strangers   prometheus.Counter
	outbound    *prometheus.CounterVec
	answeredBy  *prometheus.CounterVec
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
			Help: "Inbound interarrival jitter (RFC 3550), sampled on each running call every loss window.", Buckets: []float64{.001, .0025, .005, .01, .02, .04, .08, .16}}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_calls_ended_total",
			Help: "Calls ended, by who ended them (caller, appliance, rejected)."}, []string{"ended_by"}),
		answered: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_calls_answered_total",
			Help: "Calls answered (the setup rate is this over switchboard_sip_invites_total{result=\"accepted\"})."}),
		lossRatio: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_media_loss_ratio",
			Help: "Inbound packet loss ratio over the loss window, sampled on each running call every window.", Buckets: []float64{0, .005, .01, .02, .05, .1, .2, .5, 1}}),
		turnLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_turn_latency_seconds",
			Help:    "Per turn, from the end of the caller's speech to the first audio of the reply, measured at the appliance.",
			Buckets: []float64{.1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 10}}),
		firstAudio: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_answer_to_first_audio_seconds",
			Help: "From the answer to the first audio the caller heard.", Buckets: []float64{.02, .05, .1, .2, .5, 1, 2, 5, 10}}),
		bargeIns: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_barge_ins_total",
			Help: "Replies the caller interrupted (the playout was flushed while audio was queued)."}),
		silence: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_media_silence_seconds_total",
			Help: "Seconds of answered calls without voice, by direction (caller, agent)."}, []string{"direction"}),
		oneWay: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_calls_one_way",
			Help: "Running calls whose audio is one-way now."}),
		degradedNow: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_calls_degraded",
			Help: "Running calls over a media health threshold now."}),
		degraded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_media_degraded_total",
			Help: "Times a call crossed a media health threshold, by reason (packet_loss, no_inbound_audio, one_way_audio)."}, []string{"reason"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_call_panics_total",
			Help: "Panics recovered in a call's code; each ended only its call."}),
		strangers: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_rtp_stranger_packets_total",
			Help: "RTP and RTCP packets dropped because they came from a source other than the call's latched peer."}),
		outbound: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_outbound_calls_total",
			Help: "Calls the appliance placed, by how their dial ended (answered, busy, no-answer, failed, canceled)."}, []string{"progress"}),
		answeredBy: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_outbound_answered_by_total",
			Help: "Verdicts of answering-machine detection on placed calls (human, machine, unknown)."}, []string{"answered_by"}),
	}
	if reg != nil {
		reg.MustRegister(m.panics, m.invites, m.active, m.duration, m.rtpPackets, m.rtpLost, m.rtpLate, m.concealed, m.jitter, m.ended,
			m.answered, m.lossRatio, m.turnLatency, m.firstAudio, m.bargeIns, m.silence, m.oneWay, m.degradedNow, m.degraded, m.strangers,
			m.outbound, m.answeredBy)
	}
	return m
}

// InviteResult counts one INVITE outcome (sip.Metrics).
func (m *Metrics) InviteResult(result string) { m.invites.WithLabelValues(result).Inc() }

// callEnded counts an ended call; its RTP figures were added while it
// ran (the call's health monitor).
func (m *Metrics) callEnded(endedBy string, answeredFor float64) {
	m.ended.WithLabelValues(endedBy).Inc()
	if answeredFor > 0 {
		m.duration.Observe(answeredFor)
	}
}

// flag moves gauge g when a call's condition changes from was to is.
func (m *Metrics) flag(was, is bool, g prometheus.Gauge) {
	switch {
	case is && !was:
		g.Inc()
	case was && !is:
		g.Dec()
	}
}

// Strangers counts RTP and RTCP packets dropped from sources that may not
// steer a call (the legs' media sessions count into it).
func (m *Metrics) Strangers() prometheus.Counter { return m.strangers }
