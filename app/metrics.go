package app

import (
	"regexp"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// namingRegisterer registers with the appliance's registry and keeps the
// name of every metric registered, so MetricNames can list what the
// appliance exports even before a metric has its first sample.
type namingRegisterer struct {
	prometheus.Registerer
	mu    sync.Mutex
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *namingRegisterer) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

func (r *namingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// MetricNames lists every metric family the appliance exports, sorted
// (the dashboards' test checks them against it).
func (a *App) MetricNames() []string {
	a.metrics.mu.Lock()
	defer a.metrics.mu.Unlock()
	out := make([]string, 0, len(a.metrics.names))
	for n := range a.metrics.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
