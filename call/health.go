package call

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/media"
)

// HealthOptions are the thresholds of a call's media health. Zero fields
// take the defaults.
type HealthOptions struct {
	// Interval is how often the figures are computed and the metrics
	// updated while a call runs (default 1 s).
	Interval time.Duration
	// LossWindow is the window the loss ratio is measured over (default
	// 5 s); LossThreshold the ratio over which the call is degraded
	// (default 0.05).
	LossWindow    time.Duration
	LossThreshold float64
	// NoAudio is how long without inbound RTP audio makes a call degraded
	// (default 5 s).
	NoAudio time.Duration
	// OneWay is how long one direction may stay missing while the other
	// carries audio before the call is flagged one-way (default 5 s).
	OneWay time.Duration
	// Hangover is how long the caller must stay silent for their speech to
	// count as ended (default 300 ms); shorter pauses are within a turn.
	Hangover time.Duration
}

// Defaults of HealthOptions.
const (
	DefaultHealthInterval = time.Second
	DefaultLossWindow     = 5 * time.Second
	DefaultLossThreshold  = 0.05
	DefaultNoAudio        = 5 * time.Second
	DefaultOneWay         = 5 * time.Second
	DefaultHangover       = 300 * time.Millisecond
)

func (o HealthOptions) withDefaults() HealthOptions {
	if o.Interval <= 0 {
		o.Interval = DefaultHealthInterval
	}
	if o.LossWindow <= 0 {
		o.LossWindow = DefaultLossWindow
	}
	if o.LossThreshold <= 0 {
		o.LossThreshold = DefaultLossThreshold
	}
	if o.NoAudio <= 0 {
		o.NoAudio = DefaultNoAudio
	}
	if o.OneWay <= 0 {
		o.OneWay = DefaultOneWay
	}
	if o.Hangover <= 0 {
		o.Hangover = DefaultHangover
	}
	return o
}

// Reasons a call's media is degraded (MediaHealth.Degraded).
const (
	DegradedLoss    = "packet_loss"
	DegradedNoAudio = "no_inbound_audio"
	DegradedOneWay  = "one_way_audio"
)

// One-way directions (MediaHealth.OneWay).
const (
	// OneWayNoCallerAudio: the caller's audio does not arrive (RTP stopped
	// or only silence) while the agent's goes out.
	OneWayNoCallerAudio = "no_caller_audio"
	// OneWayNoAgentAudio: the caller's side reports (RTCP) that it
	// receives none of the agent's audio while its own arrives.
	OneWayNoAgentAudio = "no_agent_audio"
)

// MediaHealth is how a call sounds: live while it runs (MediaHealth) and
// final in its record. Durations are in milliseconds.
type MediaHealth struct {
	// LossRatio is inbound loss over the whole call; WindowLossRatio over
	// the last loss window.
	LossRatio       float64 `json:"loss_ratio"`
	WindowLossRatio float64 `json:"window_loss_ratio"`
	JitterMS        float64 `json:"jitter_ms"`
	LateFrames      uint64  `json:"late_frames"`
	ConcealedFrames uint64  `json:"concealed_frames"`
	// CallerSilenceMS and AgentSilenceMS add up the frames without voice
	// each way since the answer; CallerSilentForMS is the current run.
	CallerSilenceMS   int64 `json:"caller_silence_ms"`
	AgentSilenceMS    int64 `json:"agent_silence_ms"`
	CallerSilentForMS int64 `json:"caller_silent_for_ms"`
	// NoInboundAudioMS is how long no inbound RTP audio arrived.
	NoInboundAudioMS int64 `json:"no_inbound_audio_ms"`
	// OneWay is "" or the missing direction (OneWayNoCallerAudio,
	// OneWayNoAgentAudio); OneWaySeen says it happened during the call.
	OneWay     string `json:"one_way,omitempty"`
	OneWaySeen bool   `json:"one_way_seen"`
	// FirstAudioMS is the time from the answer to the first audio the
	// caller heard (-1: none yet).
	FirstAudioMS int64 `json:"first_audio_ms"`
	// TurnLatency is, per turn, the end of the caller's speech to the first
	// audio of the reply.
	TurnLatency Latency `json:"turn_latency"`
	// BargeIns counts replies the caller interrupted.
	BargeIns uint64 `json:"barge_ins"`
	// Degraded lists the thresholds crossed now; DegradedSeen every one
	// crossed during the call.
	Degraded     []string `json:"degraded"`
	DegradedSeen []string `json:"degraded_seen"`
}

// Latency summarises durations in milliseconds.
type Latency struct {
	Count int   `json:"count"`
	P50MS int64 `json:"p50_ms"`
	P95MS int64 `json:"p95_ms"`
	MaxMS int64 `json:"max_ms"`
}

// latencyOf summarises ds (sorted in place).
func latencyOf(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	pick := func(q float64) int64 {
		i := int(q*float64(len(ds))+0.999999) - 1
		return ds[max(0, min(i, len(ds)-1))].Milliseconds()
	}
	return Latency{Count: len(ds), P50MS: pick(0.5), P95MS: pick(0.95), MaxMS: ds[len(ds)-1].Milliseconds()}
}

// voiceLevel is the mean absolute sample value over which a frame counts
// as voice (about -40 dBFS): line noise and comfort noise stay under it.
const voiceLevel = 300

// aliveLevel is the mean absolute sample value under which a frame is
// digital silence: a working microphone path always carries some noise,
// a muted or broken one sends nothing but zeros.
const aliveLevel = 2

// oneWayTalk is the share of the one-way window the agent must talk
// while the caller sends only digital silence for the call to be
// one-way (a caller listening quietly to a short reply is not).
const oneWayTalk = 0.8

// health measures a call's media. Its Inbound and Outbound (a media.Tap)
// run once per frame on the leg's media goroutine(s): atomics and a short
// uncontended lock, no allocation. The call's monitor goroutine reads them
// every Interval.
type health struct {
	opts    HealthOptions
	metrics *Metrics

	answered atomic.Int64 // unix nanos of the answer; 0 before
	held     atomic.Bool  // the caller's side holds the call

	callerSilent, agentSilent atomic.Int64 // samples without voice since answer
	lastInAudio               atomic.Int64 // unix nanos of the last frame from real packets
	lastInVoice               atomic.Int64
	lastInAlive               atomic.Int64 // last inbound frame that was not digital silence
	agentVoiced               atomic.Int64 // voiced samples sent since answer
	lastOutVoice              atomic.Int64
	firstAudio                atomic.Int64 // unix nanos of the first voiced outbound frame after answer
	bargeIns                  atomic.Uint64

	mu         sync.Mutex // turn state: inbound and outbound may be on different goroutines
	talking    bool       // the caller is speaking (within the hangover)
	segStart   time.Time  // start of the caller's current utterance
	lastVoice  time.Time  // last voiced inbound frame
	turnEnd    time.Time  // end of the caller's last utterance, awaiting a reply
	outVoiced  bool       // the previous outbound frame was voiced
	turns      []time.Duration
	turnsTotal int
}

// minUtterance is the shortest caller speech that counts as a turn (a
// cough or a click does not).
const minUtterance = 200 * time.Millisecond

func newHealth(opts HealthOptions, m *Metrics) *health {
	return &health{opts: opts.withDefaults(), metrics: m, turns: make([]time.Duration, 0, 64)}
}

var _ media.Tap = (*health)(nil)

// answer starts the clock of the figures that count from the answer.
func (h *health) answer(at time.Time) {
	n := at.UnixNano()
	h.lastInAudio.Store(n)
	h.lastInVoice.Store(n)
	h.lastInAlive.Store(n)
	h.answered.Store(n)
}

// Inbound takes one frame of the caller's audio (media.Tap).
func (h *health) Inbound(f media.Frame) {
	if h.answered.Load() == 0 {
		return
	}
	at := f.At.UnixNano()
	if f.Status == media.FramePlayed || f.Status == media.FrameConcealed {
		h.lastInAudio.Store(at)
	}
	level := frameLevel(f)
	voiced := f.Status == media.FramePlayed && level >= voiceLevel
	if f.Status == media.FramePlayed && level >= aliveLevel {
		h.lastInAlive.Store(at)
	}
	if voiced {
		h.lastInVoice.Store(at)
	} else {
		h.callerSilent.Add(int64(f.Samples))
	}
	h.mu.Lock()
	switch {
	case voiced && !h.talking:
		h.talking, h.segStart, h.lastVoice = true, f.At, f.At
	case voiced:
		h.lastVoice = f.At
	case h.talking && f.At.Sub(h.lastVoice) >= h.opts.Hangover:
		h.talking = false
		if h.lastVoice.Sub(h.segStart) >= minUtterance {
			h.turnEnd = h.lastVoice.Add(frameDur(f.Samples))
		}
	}
	h.mu.Unlock()
}

// Outbound takes one frame sent to the caller (media.Tap).
func (h *health) Outbound(f media.Frame) {
	ans := h.answered.Load()
	if ans == 0 {
		return
	}
	voiced := f.Speech && !f.Event && f.Coded != nil && frameLevel(f) >= voiceLevel
	if !voiced {
		h.agentSilent.Add(int64(f.Samples))
		h.mu.Lock()
		h.outVoiced = false
		h.mu.Unlock()
		return
	}
	at := f.At.UnixNano()
	h.lastOutVoice.Store(at)
	h.agentVoiced.Add(int64(f.Samples))
	// A frame's time is its slot on the pacer's grid, which runs up to
	// the scheduler's lead ahead of the clock: the first audio sent right
	// at the answer may be timed before it (first_audio_ms -41 once).
	if first := max(at, ans); h.firstAudio.CompareAndSwap(0, first) {
		h.metrics.firstAudio.Observe(time.Duration(first - ans).Seconds())
	}
	h.mu.Lock()
	start := !h.outVoiced
	h.outVoiced = true
	var lat time.Duration
	if start && !h.turnEnd.IsZero() && !h.talking {
		lat = f.At.Sub(h.turnEnd)
		h.turnEnd = time.Time{}
		h.turnsTotal++
		if len(h.turns) < cap(h.turns) {
			h.turns = append(h.turns, lat)
		} else { // keep a uniform sample of the turns in the fixed buffer
			h.turns[h.turnsTotal%cap(h.turns)] = lat
		}
	}
	h.mu.Unlock()
	if lat > 0 {
		h.metrics.turnLatency.Observe(lat.Seconds())
	}
}

// peerHold marks the caller's side holding the call (no audio is
// expected from it) or resuming; either way the caller's audio counts as
// fresh from now.
func (h *health) peerHold(on bool) {
	h.held.Store(on)
	now := time.Now().UnixNano()
	h.lastInAudio.Store(now)
	h.lastInAlive.Store(now)
}

// bargeIn counts a reply the caller interrupted.
func (h *health) bargeIn() {
	h.bargeIns.Add(1)
	h.metrics.bargeIns.Inc()
}

func frameDur(samples int) time.Duration {
	return time.Duration(samples) * time.Second / media.ClockRate
}

// frameLevel is the mean absolute sample value of a frame, from its PCM or,
// without decoding, from a table of its code words' magnitudes.
func frameLevel(f media.Frame) int {
	var sum int
	switch {
	case f.PCM != nil:
		if len(f.PCM) == 0 {
			return 0
		}
		for _, s := range f.PCM {
			if s < 0 {
				sum -= int(s)
			} else {
				sum += int(s)
			}
		}
		return sum / len(f.PCM)
	case len(f.Coded) > 0:
		t := media.Magnitudes(f.Codec)
		for _, b := range f.Coded {
			sum += int(t[b])
		}
		return sum / len(f.Coded)
	}
	return 0
}
