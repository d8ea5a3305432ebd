package records

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count the call records' writes, each defined here once.
type Metrics struct {
	writes  *prometheus.CounterVec
	batches prometheus.Histogram
	commit  prometheus.Histogram
}

// NewMetrics registers the call record metrics with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_call_record_writes_total",
			Help: "Writes of a call's record (admission, answer, transfer, end; a call changed twice before its batch is written once), by result (stored, failed)."},
			[]string{"result"}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_call_record_batch_size",
			Help: "Call records written per transaction.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_call_record_batch_seconds",
			Help:    "Time to write one batch of call records, from reading the calls to the commit.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2}}),
	}
	if reg != nil {
		reg.MustRegister(m.writes, m.batches, m.commit)
	}
	return m
}

func (m *Metrics) written(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.writes.WithLabelValues("stored").Inc()
	} else {
		m.writes.WithLabelValues("failed").Inc()
	}
}

func (m *Metrics) batch(n int, took time.Duration) {
	if m == nil || n == 0 {
		return
	}
	m.batches.Observe(float64(n))
	m.commit.Observe(took.Seconds())
}
