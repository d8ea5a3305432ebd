package webhook

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// The dispatch latency measured here is the webhook package's share of
// "INVITE received → first POST sent": from the moment the caller builds
// the event and calls Deliver to the moment the first byte of the POST is
// read by a receiver on loopback.

// stampListener wraps a listener so that every request's first byte is
// time-stamped: a connection is armed when accepted and after each
// response write, and the next read that returns data fires.
type stampListener struct {
	net.Listener
	stamps chan time.Time
}

func (l *stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stampConn{Conn: c, stamps: l.stamps, armed: true}, nil
}

type stampConn struct {
	net.Conn
	stamps chan<- time.Time
	mu     sync.Mutex
	armed  bool
}

func (c *stampConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		now := time.Now()
		c.mu.Lock()
		fire := c.armed
		c.armed = false
		c.mu.Unlock()
		if fire {
			select {
			case c.stamps <- now:
			default:
			}
		}
	}
	return n, err
}

func (c *stampConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.armed = true
	c.mu.Unlock()
	return n, err
}

// newStampServer starts a loopback receiver answering 204 whose requests'
// arrival times come out of the returned channel.
func newStampServer(tb testing.TB) (*httptest.Server, <-chan time.Time) {
	tb.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	stamps := make(chan time.Time, 16)
	srv.Listener = &stampListener{Listener: srv.Listener, stamps: stamps}
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv, stamps
}

// measureDispatch makes n deliveries and returns, for each, the time from
// building the event and calling Deliver to the first byte of the POST
// arriving at the receiver.
func measureDispatch(tb testing.TB, d *Dispatcher, tg Target, stamps <-chan time.Time, n int, loop func() bool) []time.Duration {
	tb.Helper()
	lat := make([]time.Duration, 0, n)
	for loop() {
		t0 := time.Now()
		ev := incoming(t0)
		res, err := d.Deliver(tb.Context(), tg, ev)
		if err != nil || !res.Delivered {
			tb.Fatalf("deliver: %v", err)
		}
		lat = append(lat, (<-stamps).Sub(t0))
	}
	return lat
}

// percentile returns the p-th percentile (0-100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// latencyStats sorts lat and returns p50, p99 and max.
func latencyStats(lat []time.Duration) (p50, p99, maxLat time.Duration) {
	slices.Sort(lat)
	return percentile(lat, 50), percentile(lat, 99), lat[len(lat)-1]
}

// counter returns a loop function that runs n times.
func counter(n int) func() bool {
	i := 0
	return func() bool { i++; return i <= n }
}

func latencySetups(tb testing.TB) map[string]Options {
	tb.Helper()
	cold := http.DefaultTransport.(*http.Transport).Clone()
	cold.DisableKeepAlives = true
	tb.Cleanup(cold.CloseIdleConnections)
	return map[string]Options{
		// warm: the connection to the webhook host is reused.
		"warm": {},
		// cold: a new TCP connection for every event.
		"cold": {Transport: cold},
	}
}

// TestDispatchLatencyDistribution reports the dispatch latency
// distribution; it asserts only that every delivery arrived. Figures are
// for the lead's report, never a pass/fail bound (the machine is shared).
func TestDispatchLatencyDistribution(t *testing.T) {
	for name, opts := range latencySetups(t) {
		t.Run(name, func(t *testing.T) {
			srv, stamps := newStampServer(t)
			d := NewDispatcher(opts, zerolog.Nop())
			defer func() { require.NoError(t, d.Close()) }()
			tg := Target{URL: srv.URL + "/hook", SigningSecret: newSecret(t), AuthToken: "tok"}
			measureDispatch(t, d, tg, stamps, 10, counter(10)) // warm up
			lat := measureDispatch(t, d, tg, stamps, 300, counter(300))
			require.Len(t, lat, 300)
			p50, p99, mx := latencyStats(lat)
			t.Logf("dispatch latency (%s, n=%d): p50=%v p99=%v max=%v", name, len(lat), p50, p99, mx)
		})
	}
}

// BenchmarkDispatchLatency measures Deliver to a loopback receiver and
// reports the call → first-byte-arrival percentiles in microseconds.
func BenchmarkDispatchLatency(b *testing.B) {
	for _, name := range []string{"warm", "cold"} {
		opts := latencySetups(b)[name]
		b.Run(name, func(b *testing.B) {
			srv, stamps := newStampServer(b)
			d := NewDispatcher(opts, zerolog.Nop())
			defer d.Close()
			tg := Target{URL: srv.URL + "/hook", SigningSecret: newSecret(b), AuthToken: "tok"}
			measureDispatch(b, d, tg, stamps, 10, counter(10))
			b.ReportAllocs()
			lat := measureDispatch(b, d, tg, stamps, b.N, b.Loop)
			p50, p99, mx := latencyStats(lat)
			b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(p99.Nanoseconds())/1e3, "p99-µs")
			b.ReportMetric(float64(mx.Nanoseconds())/1e3, "max-µs")
		})
	}
}

// BenchmarkSignAndEncode measures the CPU work of one attempt before the
// network: encoding the event and signing it.
func BenchmarkSignAndEncode(b *testing.B) {
	d := NewDispatcher(Options{}, zerolog.Nop())
	defer d.Close()
	tg := Target{URL: "http://127.0.0.1:9/hook", SigningSecret: newSecret(b)}
	ev := incoming(time.Now())
	b.ReportAllocs()
	for b.Loop() {
		p, err := d.prepare(tg)
		if err != nil {
			b.Fatal(err)
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.wh.Sign(ev.ID, time.Now(), payload); err != nil {
			b.Fatal(err)
		}
	}
}
