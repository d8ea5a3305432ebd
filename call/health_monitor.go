package call

import (
	"slices"
	"sync"
	"time"

	"switchboard/media"
)

// monitor turns a call's counters into its MediaHealth every Interval
// while the call runs: the loss window, the degraded thresholds, the live
// metrics. The Manager's monitorClock ticks it (one goroutine for all
// calls); the call ticks it once more at its end.
type monitor struct {
	h          *health
	stats      func() media.StatsSnapshot
	now        func() time.Time
	onDegraded func(reason string, mh MediaHealth)

	// monitor goroutine only
	window      []lossSample
	lastPub     media.StatsSnapshot
	lastSilence [2]int64
	nextObserve time.Time

	mu         sync.Mutex
	cur        MediaHealth
	seen       map[string]bool
	oneWaySeen bool
}

type lossSample struct {
	at             time.Time
	expected, lost int64
	agentVoiced    int64
}

func newMonitor(h *health, stats func() media.StatsSnapshot, onDegraded func(string, MediaHealth)) *monitor {
	return &monitor{h: h, stats: stats, now: time.Now, onDegraded: onDegraded, seen: map[string]bool{},
		cur: MediaHealth{FirstAudioMS: -1, Degraded: []string{}, DegradedSeen: []string{}}}
}

// tick computes the figures now.
func (m *monitor) tick() {
	h, now := m.h, m.now()
	st := m.stats()
	m.publish(st)
	mh := MediaHealth{JitterMS: ms(st.Jitter), LateFrames: st.Late, ConcealedFrames: st.Concealed, BargeIns: h.bargeIns.Load(),
		CallerSilenceMS: samplesMS(h.callerSilent.Load()), AgentSilenceMS: samplesMS(h.agentSilent.Load()), FirstAudioMS: -1}
	if st.Expected > 0 && st.Lost > 0 {
		mh.LossRatio = float64(st.Lost) / float64(st.Expected)
	}
	voicedNow := h.agentVoiced.Load()
	m.window = append(m.window, lossSample{at: now, expected: int64(st.Expected), lost: st.Lost, agentVoiced: voicedNow})
	keep := max(h.opts.LossWindow, h.opts.OneWay)
	for len(m.window) > 1 && now.Sub(m.window[1].at) >= keep {
		m.window = m.window[1:]
	}
	first := m.window[0]
	for _, s := range m.window {
		if now.Sub(s.at) <= h.opts.LossWindow {
			first = s
			break
		}
	}
	// How much of the one-way window the agent talked.
	var agentTalk float64
	if oldest := m.window[0]; now.Sub(oldest.at) >= h.opts.OneWay-h.opts.Interval/2 {
		agentTalk = float64(voicedNow-oldest.agentVoiced) / media.ClockRate / now.Sub(oldest.at).Seconds()
	}
	if de := int64(st.Expected) - first.expected; de > 0 {
		if dl := st.Lost - first.lost; dl > 0 {
			mh.WindowLossRatio = float64(dl) / float64(de)
		}
	}
	ans := h.answered.Load()
	if fa := h.firstAudio.Load(); fa != 0 && ans != 0 {
		mh.FirstAudioMS = time.Duration(fa - ans).Milliseconds()
	}
	var degraded []string
	if ans != 0 && h.held.Load() { // on hold: the caller's silence is expected
		h.lastInAudio.Store(now.UnixNano())
		h.lastInAlive.Store(now.UnixNano())
	}
	if ans != 0 {
		answeredFor := now.Sub(time.Unix(0, ans))
		noAudio := now.Sub(time.Unix(0, h.lastInAudio.Load()))
		callerQuiet := now.Sub(time.Unix(0, h.lastInVoice.Load()))
		callerDead := now.Sub(time.Unix(0, h.lastInAlive.Load()))
		mh.NoInboundAudioMS, mh.CallerSilentForMS = noAudio.Milliseconds(), callerQuiet.Milliseconds()
		if mh.WindowLossRatio > h.opts.LossThreshold && answeredFor >= h.opts.LossWindow/2 {
			degraded = append(degraded, DegradedLoss)
		}
		if noAudio >= h.opts.NoAudio {
			degraded = append(degraded, DegradedNoAudio)
		}
		switch {
		case answeredFor >= h.opts.OneWay && (noAudio >= h.opts.OneWay || (callerDead >= h.opts.OneWay && agentTalk >= oneWayTalk)):
			mh.OneWay = OneWayNoCallerAudio
		case st.RTCPIn > 0 && st.RemoteFractionLost >= 0.9 && noAudio < h.opts.OneWay && answeredFor >= h.opts.OneWay:
			mh.OneWay = OneWayNoAgentAudio
		}
		if mh.OneWay != "" {
			degraded = append(degraded, DegradedOneWay)
		}
	}
	h.mu.Lock()
	turns := slices.Clone(h.turns)
	h.mu.Unlock()
	mh.TurnLatency = latencyOf(turns)
	if now.After(m.nextObserve) && st.PacketsIn > 0 && ans != 0 {
		m.nextObserve = now.Add(h.opts.LossWindow)
		h.metrics.lossRatio.Observe(mh.WindowLossRatio)
		h.metrics.jitter.Observe(st.Jitter.Seconds())
	}
	var fresh []string
	m.mu.Lock()
	wasOneWay := m.cur.OneWay != ""
	wasDegraded := len(m.cur.Degraded) > 0
	for _, r := range degraded {
		if !slices.Contains(m.cur.Degraded, r) {
			fresh = append(fresh, r)
		}
		m.seen[r] = true
	}
	m.oneWaySeen = m.oneWaySeen || mh.OneWay != ""
	mh.OneWaySeen = m.oneWaySeen
	mh.Degraded = append([]string{}, degraded...)
	mh.DegradedSeen = seenList(m.seen)
	m.cur = mh
	m.mu.Unlock()
	h.metrics.flag(wasOneWay, mh.OneWay != "", h.metrics.oneWay)
	h.metrics.flag(wasDegraded, len(degraded) > 0, h.metrics.degradedNow)
	for _, r := range fresh {
		h.metrics.degraded.WithLabelValues(r).Inc()
		if m.onDegraded != nil {
			m.onDegraded(r, mh)
		}
	}
}

// publish adds what changed since the last tick to the RTP counters, so
// they move while calls run.
func (m *monitor) publish(st media.StatsSnapshot) {
	mt, p := m.h.metrics, m.lastPub
	mt.rtpPackets.WithLabelValues("in").Add(float64(st.PacketsIn - p.PacketsIn))
	mt.rtpPackets.WithLabelValues("out").Add(float64(st.PacketsOut - p.PacketsOut))
	if d := st.Lost - max(p.Lost, 0); st.Lost > 0 && d > 0 {
		mt.rtpLost.Add(float64(d))
	}
	mt.rtpLate.Add(float64(st.Late - p.Late))
	mt.concealed.Add(float64(st.Concealed - p.Concealed))
	cs, as := m.h.callerSilent.Load(), m.h.agentSilent.Load()
	mt.silence.WithLabelValues("caller").Add(float64(cs-m.lastSilence[0]) / media.ClockRate)
	mt.silence.WithLabelValues("agent").Add(float64(as-m.lastSilence[1]) / media.ClockRate)
	m.lastSilence = [2]int64{cs, as}
	if st.Lost < p.Lost { // duplicates can lower the cumulative figure
		st.Lost = p.Lost
	}
	m.lastPub = st
}

// health returns the last figures.
func (m *monitor) health() MediaHealth {
	m.mu.Lock()
	defer m.mu.Unlock()
	mh := m.cur
	mh.Degraded = slices.Clone(mh.Degraded)
	mh.DegradedSeen = slices.Clone(mh.DegradedSeen)
	return mh
}

// end takes the call out of the live gauges.
func (m *monitor) end() {
	m.mu.Lock()
	oneWay, degraded := m.cur.OneWay != "", len(m.cur.Degraded) > 0
	m.mu.Unlock()
	m.h.metrics.flag(oneWay, false, m.h.metrics.oneWay)
	m.h.metrics.flag(degraded, false, m.h.metrics.degradedNow)
}

func seenList(seen map[string]bool) []string {
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func samplesMS(n int64) int64 { return n * 1000 / media.ClockRate }
