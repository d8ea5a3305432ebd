package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"
)

// sample is one second of the run.
type sample struct {
	app, sipp, prov procSample
	// host is the whole machine's busy CPU time.
	host   procSample
	active int
}

// report holds what a run measured.
type report struct {
	opts     options
	machine  string
	cmdline  string
	audioLen time.Duration
	// audioPause is the continuous speech's longest pause (looped).
	audioPause  time.Duration
	idle, final procSample
	// start and end are the appliance at sipp's start and end.
	start, end procSample
	provFinal  procSample
	// provTally is the stand-in's last log line (the stream bot's
	// counts).
	provTally string
	profiled  string
	// logged counts the appliance's warnings and errors by message.
	logged     []logCount
	samples    []sample
	wall       time.Duration
	sippExit   int
	ok, failed int
	leftActive int
	before     metrics
	after      metrics
	flood      *flood
}

// steady is the span of samples at the peak number of live calls (at least
// 95% of it): its CPU use divided by the calls is the cost of one call.
func (r *report) steady() (peak int, cpu, sippCPU, provCPU float64, span time.Duration, avgActive float64) {
	peak, cpu, sippCPU, provCPU, _, span, avgActive = r.steadyHost()
	return
}

// steadyHost is steady with the whole machine's busy cores over the span.
func (r *report) steadyHost() (peak int, cpu, sippCPU, provCPU, hostCPU float64, span time.Duration, avgActive float64) {
	for _, s := range r.samples {
		peak = max(peak, s.active)
	}
	first, last := -1, -1
	for i, s := range r.samples {
		if peak > 0 && float64(s.active) >= 0.95*float64(peak) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last <= first {
		return peak, 0, 0, 0, 0, 0, 0
	}
	a, b := r.samples[first], r.samples[last]
	span = b.app.at.Sub(a.app.at)
	cpu = float64(b.app.cpu-a.app.cpu) / float64(span)
	sippCPU = float64(b.sipp.cpu-a.sipp.cpu) / float64(span)
	provCPU = float64(b.prov.cpu-a.prov.cpu) / float64(span)
	if hs := b.host.at.Sub(a.host.at); hs > 0 {
		hostCPU = float64(b.host.cpu-a.host.cpu) / float64(hs)
	}
	var sum int
	for _, s := range r.samples[first : last+1] {
		sum += s.active
	}
	return peak, cpu, sippCPU, provCPU, hostCPU, span, float64(sum) / float64(last-first+1)
}

// peakRSS is the appliance's peak resident set over the run (VmHWM, read
// every second and at the end) and the largest VmRSS sampled.
func (r *report) peakRSS() (hwm, rss int64) {
	for _, s := range r.samples {
		hwm, rss = max(hwm, s.app.hwm), max(rss, s.app.rss)
	}
	return max(hwm, r.final.hwm, r.end.hwm), rss
}

// rssPerCall is what a call costs an operator provisioning memory: the
// peak RSS over the idle process (read after start, before the first
// call), divided by the peak number of live calls; 0 with no call.
func (r *report) rssPerCall(peak int) float64 {
	hwm, _ := r.peakRSS()
	if peak <= 0 {
		return 0
	}
	return float64(hwm-r.idle.rss) / 1024 / float64(peak)
}

func (r *report) print(w io.Writer) {
	peak, cpu, sippCPU, provCPU, hostCPU, span, avg := r.steadyHost()
	peakRSS, maxRSS := r.peakRSS()
	d := func(name string) float64 { return delta(r.before, r.after, name) }
	in, out := d(`switchboard_rtp_packets_total{direction="in"}`), d(`switchboard_rtp_packets_total{direction="out"}`)
	pct := func(v float64) string {
		if in == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f%%", 100*v/in)
	}
	fmt.Fprintf(w, "\nmachine: %s\n", r.machine)
	engine := r.opts.engine
	switch engine {
	case "upstream":
		engine += " (provider stand-in speaking " + r.opts.providerFormat + ")"
	case "stream":
		engine += " (Twilio Media Streams to the echo bot, its own process)"
	}
	if (r.opts.engine == "upstream" || r.opts.engine == "stream") && r.opts.standinSched == "idle" {
		engine += " [stand-in under SCHED_IDLE: another machine's CPU]"
	}
	if r.opts.cps > 0 {
		fmt.Fprintf(w, "load:    %.0f calls/s for %v to the %s engine (%s): INVITE, answer, ACK, BYE at once, at most %d live\n", r.opts.cps, r.opts.duration, engine, r.opts.codec, r.opts.calls)
	} else {
		speech := fmt.Sprintf("speech with pauses (%s, %v loop)", r.opts.pcap, r.audioLen.Round(10*time.Millisecond))
		if r.opts.audio == "continuous" {
			speech = fmt.Sprintf("continuous speech (espeak-ng, %v loop, longest pause %v)", r.audioLen.Round(10*time.Millisecond), r.audioPause)
		}
		fmt.Fprintf(w, "load:    %d calls to the %s engine, %.0f new calls/s, each caller talking for %v: %s in %s, then BYE\n", r.opts.calls, engine, r.opts.rate, r.opts.duration, speech, r.opts.codec)
		if peak > 0 {
			late := "-"
			if in > 0 {
				late = fmt.Sprintf("%.3f%%", 100*d("switchboard_rtp_late_frames_total")/in)
			}
			ratio := "-"
			if in > 0 {
				ratio = fmt.Sprintf("%.3f", out/in)
			}
			fmt.Fprintf(w, "result:  %.0f KiB peak RSS over idle per call, %s late inbound frames, out/in %s, %.2f cores at %d live calls\n",
				r.rssPerCall(peak), late, ratio, cpu, peak)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v ...any) { fmt.Fprintf(tw, "  %s\t%s\n", k, fmt.Sprint(v...)) }
	fmt.Fprintln(tw, "\ncalls\t")
	row("completed (sipp)", r.ok)
	row("failed (sipp)", r.failed, "   (sipp exit ", r.sippExit, ")")
	row("peak concurrent (switchboard_calls_active)", peak)
	row("ended by caller / appliance / rejected", d(`switchboard_calls_ended_total{ended_by="caller"}`), " / ",
		d(`switchboard_calls_ended_total{ended_by="appliance"}`), " / ", d(`switchboard_calls_ended_total{ended_by="rejected"}`))
	row("INVITEs accepted / overloaded", d(`switchboard_sip_invites_total{result="accepted"}`), " / ", d(`switchboard_sip_invites_total{result="overloaded"}`))
	row("left active after the run", r.leftActive)
	row("call record writes stored / failed", d(`switchboard_call_record_writes_total{result="stored"}`), " / ",
		d(`switchboard_call_record_writes_total{result="failed"}`))
	if n := d("switchboard_call_record_batch_size_count"); n > 0 {
		row("call record transactions", fmt.Sprintf("%.0f (%.1f records, %.2f ms each on average)", n,
			d("switchboard_call_record_batch_size_sum")/n, 1000*d("switchboard_call_record_batch_seconds_sum")/n))
	}
	row("wall time", r.wall.Round(time.Second))
	fmt.Fprintln(tw, "appliance resources\t")
	if r.opts.cps == 0 { // call setup has no steady span of live calls
		row("CPU at peak (steady span)", fmt.Sprintf("%.1f%% of one core over %v (avg %.0f calls)", 100*cpu, span.Round(time.Second), avg))
		if avg > 0 {
			row("CPU per call", fmt.Sprintf("%.2f%% of one core", 100*cpu/avg))
		}
		row("sipp CPU at peak (same span)", fmt.Sprintf("%.1f%% of one core", 100*sippCPU))
	}
	switch r.opts.engine {
	case "upstream":
		row("provider stand-in CPU at peak (same span)", fmt.Sprintf("%.1f%% of one core", 100*provCPU))
	case "stream":
		row("echo bot CPU at peak (same span)", fmt.Sprintf("%.1f%% of one core", 100*provCPU))
	}
	if r.opts.cps == 0 && hostCPU > 0 {
		// The machine may be shared: what else ran during the span says
		// whether the run had the cores it counts on.
		row("whole machine busy (same span)", fmt.Sprintf("%.2f cores, of which %.2f outside the appliance, sipp and the stand-in",
			hostCPU, max(0, hostCPU-cpu-sippCPU-provCPU)))
	}
	if r.opts.cps > 0 && r.ok > 0 {
		secs := r.wall.Seconds()
		setup := r.end.cpu - r.start.cpu
		row("call setups completed per second", fmt.Sprintf("%.0f (%d in %v)", float64(r.ok)/secs, r.ok, r.wall.Round(time.Second)))
		row("appliance CPU during the run", fmt.Sprintf("%.1f%% of one core", 100*float64(setup)/float64(r.wall)))
		row("CPU per call setup", fmt.Sprintf("%.2f ms", float64(setup.Microseconds())/1000/float64(r.ok)))
		if n := len(r.samples); n > 1 {
			a, b := r.samples[0], r.samples[n-1]
			row("sipp CPU during the run", fmt.Sprintf("%.1f%% of one core", 100*float64(b.sipp.cpu-a.sipp.cpu)/float64(time.Duration(n-1)*time.Second)))
		}
	}
	row("total CPU time of the run", (r.final.cpu - r.idle.cpu).Round(10*time.Millisecond))
	row("RSS idle / peak (VmHWM) / largest sampled VmRSS", fmt.Sprintf("%.1f MiB / %.1f MiB / %.1f MiB", mib(r.idle.rss), mib(peakRSS), mib(maxRSS)))
	if peak > 0 && r.opts.cps == 0 {
		row("peak RSS over idle per call ((VmHWM-idle)/peak calls)", fmt.Sprintf("%.0f KiB", r.rssPerCall(peak)))
	}
	if r.profiled != "" {
		row("profiles at the steady state", r.profiled)
	}
	if len(r.logged) == 0 {
		row("appliance warnings / errors logged", "none")
	}
	for i, l := range r.logged {
		if i == 5 {
			row("", fmt.Sprintf("(%d more messages)", len(r.logged)-i))
			break
		}
		row(map[bool]string{true: "appliance warnings / errors logged"}[i == 0], fmt.Sprintf("%d × %s: %s", l.n, l.level, l.msg))
	}
	if r.flood != nil {
		fmt.Fprintln(tw, "API flood\t")
		row("GET "+r.opts.apiPath+" (owner key"+map[bool]string{true: ", no default limit", false: ""}[r.opts.unlimitedKeys]+")", r.flood.summary())
	}
	fmt.Fprintln(tw, "media (appliance's own stats, /metrics delta)\t")
	row("RTP packets in / out", fmt.Sprintf("%.0f / %.0f", in, out))
	row("lost packets (RFC 3550)", fmt.Sprintf("%.0f (%s)", d("switchboard_rtp_packets_lost_total"), pct(d("switchboard_rtp_packets_lost_total"))))
	row("late frames", fmt.Sprintf("%.0f (%s)", d("switchboard_rtp_late_frames_total"), pct(d("switchboard_rtp_late_frames_total"))))
	row("concealed frames", fmt.Sprintf("%.0f (%s)", d("switchboard_rtp_concealed_frames_total"), pct(d("switchboard_rtp_concealed_frames_total"))))
	if r.opts.engine == "stream" {
		fmt.Fprintln(tw, "streams (/metrics delta)\t")
		row("opened / unreachable", d(`switchboard_stream_connects_total{result="ok"}`), " / ", d(`switchboard_stream_connects_total{result="unreachable"}`))
		row("caller frames not sent (bot too slow)", d("switchboard_stream_frames_dropped_total"))
		row("bot audio dropped (max_queue)", fmt.Sprintf("%.1f s", d("switchboard_stream_audio_dropped_seconds_total")))
		row("echo bot's tally", r.provTally)
	}
	tw.Flush()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// logCount is how many times the appliance logged one message.
type logCount struct {
	level, msg string
	n          int
}

// logSummary counts the appliance's JSON log lines (warn level and above:
// the run's log level) by level and message, most frequent first.
func logSummary(path string) []logCount {
	f, err := os.Open(path)
	if err != nil {
		return []logCount{{level: "error", msg: "appliance log unreadable: " + err.Error(), n: 1}}
	}
	defer f.Close()
	counts := map[[2]string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var l struct{ Level, Message string }
		if json.Unmarshal(sc.Bytes(), &l) != nil || (l.Level != "warn" && l.Level != "error" && l.Level != "fatal" && l.Level != "panic") {
			continue
		}
		counts[[2]string{l.Level, l.Message}]++
	}
	out := make([]logCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, logCount{level: k[0], msg: k[1], n: n})
	}
	// Most frequent first; ties by message, then level ("error" before
	// "warn"), so the order does not follow the map's.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.n != b.n {
			return a.n > b.n
		}
		if a.msg != b.msg {
			return a.msg < b.msg
		}
		return a.level < b.level
	})
	return out
}
