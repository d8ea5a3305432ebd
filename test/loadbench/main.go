// Command loadbench measures the appliance under concurrent calls: it
// starts the built switchboard binary on loopback, has sipp place -calls
// concurrent calls to the demo number (or a line-test number with
// -engine loopback, or an agent bridged to the provider stand-in with
// -engine upstream) that play sipp's G.711 speech pcap
// for -duration, and reports completed and failed calls, the appliance's
// CPU and memory per call (read from /proc, the appliance being its own
// process), and the appliance's own media statistics (late, lost and
// concealed frames, scraped from GET /metrics before and after). With
// -api-rate it also floods the HTTP API (GET /v1/calls with the owner key
// by default) for as long as the calls last, and reports what the API
// answered. With -cps it measures call setup instead: -cps calls a second
// (INVITE, answer, ACK, BYE) for -duration.
//
// Run it with `make bench-calls` (CALLS=200 DURATION=30s by default).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var o options
	flag.IntVar(&o.calls, "calls", 200, "concurrent calls")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long each call plays audio before BYE")
	flag.Float64Var(&o.rate, "rate", 20, "new calls per second while ramping up")
	flag.StringVar(&o.binary, "binary", "bin/switchboard", "switchboard binary (built by make build)")
	flag.StringVar(&o.pcap, "pcap", "/usr/share/sip-tester/g711a.pcap", "G.711 A-law RTP capture sipp plays (7.08 s, 30 ms packets)")
	flag.StringVar(&o.audio, "audio", "continuous", "what each caller says, looped for -duration: continuous (a run-on complaint spoken by espeak-ng, no pause long enough to end a turn: the caller never stops talking) or pcap (the -pcap capture: speech with a 950 ms pause every 7 s, one turn a loop)")
	flag.StringVar(&o.stt, "stt", "pocketsphinx", "the appliance's speech.stt_engine: pocketsphinx (its default: caller turns the model gives no transcript of are transcribed locally, their audio kept meanwhile) or none (that fallback off)")
	flag.IntVar(&o.rtpBase, "rtp-base", 40000, "first RTP port of the appliance's range (4 ports per call are reserved)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (logs, sipp statistics)")
	flag.StringVar(&o.engine, "engine", "echo", "what answers: echo (the demo agent on the offline echo engine: VAD, greeting, turns), loopback (the line test: media only), upstream (an agent bridged over WebSocket to the provider stand-in ./test/loadbench/provider, its own process, which echoes every audio frame back as the model's audio) or stream (a number routed to a Twilio Media Streams bot, ./test/loadbench/streambot, its own process, which echoes every frame and places a mark each second)")
	flag.StringVar(&o.providerFormat, "provider-format", "pcm", "audio with the provider stand-in (-engine upstream): pcm (PCM16 24 kHz) or pcmu (with -codec pcmu: a passthrough)")
	flag.StringVar(&o.codec, "codec", "pcma", "the callers' codec: pcma or pcmu (the capture's A-law transcoded)")
	flag.Float64Var(&o.cps, "cps", 0, "call setup rate instead of concurrent calls: this many calls a second (INVITE, answer, ACK, BYE at once) for -duration")
	flag.StringVar(&o.profile, "profile", "", "directory for the appliance's profiles taken over its loopback pprof listener at the steady state, ending just before the first calls hang up (the memory's peak): goroutines.txt, cpu.pprof for 8 s, heap.pprof, memstats.txt")
	flag.IntVar(&o.apiRate, "api-rate", 0, "API flood alongside the calls: GET requests per second with the owner key (0: none)")
	flag.IntVar(&o.apiWorkers, "api-workers", 32, "concurrent clients of the API flood")
	flag.StringVar(&o.apiPath, "api-path", "/v1/calls", "what the API flood asks for")
	flag.BoolVar(&o.unlimitedKeys, "unlimited-keys", false, "start the appliance with no default key rate limit (keys.default_qps=0, keys.default_qpm=0), as before they existed")
	flag.StringVar(&o.standinSched, "standin-sched", "normal", "the stand-in's scheduling policy (-engine upstream, stream): normal, or idle (SCHED_IDLE: it stands for the provider's or the customer's machine, so it only takes the CPU the appliance and sipp leave)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o)
	if rep != nil {
		rep.print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}
